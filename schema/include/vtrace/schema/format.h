// The vocabulary of the .vtrace container, in one place (see docs/FORMAT.md for the grammar).
//
// A .vtrace file is a valid sequence of zstd frames:
//   [header: skippable frame, magic kHeaderSkippableMagic]
//   [data frame]*          zstd frames with content checksums; each holds size-prefixed records
//   [footer: skippable frame, magic kFooterSkippableMagic] ending with a fixed 32-byte trailer
// Records inside data frames: u32 little-endian length, u8 record kind, then the record payload.
//
// Thread rules: constants and plain structs only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vtrace::schema {

// Format version. Same major = readable; a reader refuses a newer major, naming both versions.
// 1.1 adds integrity checks for the header and the footer (docs/FORMAT.md, "Versions"): the header
// frame ends with an XXH3-128 of its content, the footer holds that hash too, and the trailer's
// third u64 holds an XXH3-64 of the footer table. 1.0 files (no such checks) stay readable, and a
// 1.0 reader reads 1.1 files (it ignores the added bytes and field). 1.2 changes no container
// byte: it gives each optional method (spec 5.2) its own event kind in place of `OptionalCall`,
// which 1.2 readers still decode; an older reader refuses those (required) kinds by name.
inline constexpr std::uint16_t kFormatMajor = 1;
inline constexpr std::uint16_t kFormatMinor = 2;
// The first minor whose files carry the header hash and the footer checksum.
inline constexpr std::uint16_t kFirstChecksummedMinor = 1;
// Bytes after the Header table in the header frame of a file of minor >= 1: u64 LE low and u64 LE
// high of the XXH3-128 of the header frame's content before them (kHeaderMagic + table).
inline constexpr std::size_t kHeaderHashBytes = 16;

// zstd skippable frame magics (0x184D2A50..0x184D2A5F are skippable).
inline constexpr std::uint32_t kHeaderSkippableMagic = 0x184D2A5Au;
inline constexpr std::uint32_t kFooterSkippableMagic = 0x184D2A5Bu;
// First 8 bytes of the header frame's content, and of the trailer.
inline constexpr std::array<char, 8> kHeaderMagic = {'V', 'T', 'R', 'A', 'C', 'E', '\0', '\1'};
inline constexpr std::array<char, 8> kTrailerMagic = {'V', 'T', 'R', 'E', 'N', 'D', '\0', '\1'};
// Trailer: last 32 bytes of the file, inside the footer frame:
//   u64 footer_offset (file offset of the footer frame), u64 footer_size (whole frame, bytes),
//   u64 footer_checksum, 8-byte kTrailerMagic.
// footer_checksum (format 1.1; the reserved 0 of 1.0 files) is the XXH3-64 of the footer table,
// the footer frame's content before the trailer; a hash of 0 is stored as 1, so that 0 always
// means "not checked".
inline constexpr std::size_t kTrailerBytes = 32;

// Every record starts with u32 LE payload length (not counting these 5 bytes) and u8 RecordKind.
inline constexpr std::size_t kRecordPrefixBytes = 5;
// A blob record's payload starts with this header: u64 LE id.low, u64 LE id.high, u64 LE raw
// (decoded) size, u8 BlobEncoding, 7 zero bytes; the encoded bytes follow.
inline constexpr std::size_t kBlobRecordHeaderBytes = 32;

// Record kinds inside data frames.
enum class RecordKind : std::uint8_t {
  kEvent = 1,  // payload: a FlatBuffers `vtrace.Event` (schema/vtrace.fbs), size-prefix-free
  kBlob = 2,   // payload: BlobRecord header (below) + encoded bytes
};

// Blob encodings. kF16BytePlanes stores all low bytes of each 16-bit element, then all high
// bytes (it compresses better for f16 data; measured in bench/).
enum class BlobEncoding : std::uint8_t { kRaw = 0, kBytePlanes16 = 1 };

// Limits that bound every allocation a reader makes from untrusted sizes.
inline constexpr std::uint64_t kMaxRecordBytes = 256ull << 20;       // one event or blob
inline constexpr std::uint64_t kMaxFrameContentBytes = 512ull << 20;  // one decompressed frame
inline constexpr std::uint64_t kMaxHeaderBytes = 1ull << 20;
inline constexpr std::uint64_t kMaxFooterBytes = 256ull << 20;
// FlatBuffers verifier limits for the header and footer tables.
inline constexpr unsigned kMaxFlatbufferDepth = 16;
inline constexpr unsigned kMaxFlatbufferTables = 4096;

// The identity of a payload: XXH3-128 of its raw (decoded) bytes.
struct BlobId {
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  friend auto operator<=>(const BlobId&, const BlobId&) = default;
  std::string hex() const;  // 32 lowercase hex digits, high then low
};
BlobId blob_id_of(const void* data, std::size_t size);

}  // namespace vtrace::schema
