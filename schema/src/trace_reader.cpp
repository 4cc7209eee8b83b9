// The reader. Two ways in: the footer's indexes (seek straight to a frame) or, for a file without
// a valid trailer, a scan that decodes frame after frame and keeps what is complete. Every size
// from the file is checked against format.h before it sizes an allocation.
//
// Longer than the project's ~600-line guide on purpose: the footer path, the recovery scan and
// verify_all() share one frame decoder and one view of the file's limits (format.h); split across
// files, that state would have to be exposed between them.
#include "vtrace/schema/trace_reader.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <optional>

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_d_forceIgnoreChecksum (stable since zstd 1.4.7)
#include <container_generated.h>
#include <fmt/format.h>
#include <xxhash.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "container_internal.h"

namespace vtrace::schema {
namespace {

// What every error about a damaged header says (is_header_damage).
constexpr std::string_view kHeaderDamage = "the header frame at offset 0 does not match its checksum";

using namespace detail;

constexpr std::size_t kReadChunk = 1u << 20;
constexpr std::size_t kOutSlack = 128u << 10;
// decode() sizes its output by the index's content size up to this much, then grows it as zstd
// produces content: the index's claim (up to kMaxFrameContentBytes) is proven only by decoding.
constexpr std::uint64_t kFirstContentBytes = 8u << 20;

struct BlobLoc {
  BlobId id;
  std::uint64_t frame_index = 0;
  std::uint64_t record_offset = 0;
  std::uint64_t raw_bytes = 0;
  std::uint64_t stored_bytes = 0;
  BlobEncoding encoding = BlobEncoding::kRaw;
  friend bool operator==(const BlobLoc&, const BlobLoc&) = default;
};

struct Decoded {
  std::vector<std::uint8_t> content;
  std::uint64_t consumed = 0;  // compressed bytes of the frame (input read when cut)
  bool complete = false;
  BlobId compressed_hash;
  // One entry per zstd call that produced content: the compressed and content bytes before and
  // after it. decode() never feeds zstd past the end of the current block, so a call covers one
  // block or, for a raw block, the part of it that was available.
  struct Step {
    std::uint64_t in_before = 0, in_after = 0, out_before = 0, out_after = 0;
  };
  std::vector<Step> progress;

  // The fewest compressed bytes that produce the first `content_bytes` bytes of content: what a
  // cut frame's recovered prefix costs in the file. Compressed blocks decode whole; a raw block
  // (as many bytes in as out: zstd stores a block raw unless compressing makes it smaller) decodes
  // byte by byte.
  std::uint64_t compressed_for(std::uint64_t content_bytes) const {
    if (content_bytes == 0) return 0;
    for (const Step& s : progress) {
      if (s.out_after < content_bytes) continue;
      const bool raw = s.in_after - s.in_before == s.out_after - s.out_before;
      return raw ? s.in_before + (content_bytes - s.out_before) : s.in_after;
    }
    return consumed;
  }
};

// RFC 8878: every zstd block starts with a 3-byte header.
constexpr std::size_t kZstdBlockHeaderBytes = 3;

struct Record {
  std::uint64_t offset = 0;  // of the u32 length, inside the decompressed frame
  RecordKind kind = RecordKind::kEvent;
  std::span<const std::uint8_t> payload;
};

BlobId from_xxh(const XXH128_hash_t& h) { return BlobId{h.low64, h.high64}; }
BlobId from_fb(const container::Hash128& h) { return BlobId{h.low(), h.high()}; }

// Parses the records of one decompressed frame. With allow_partial_tail (a cut frame), a record
// that runs past the end stops the walk; otherwise it is corruption. Returns the end of the last
// complete record.
template <typename OnRecord>
TraceResult<std::uint64_t> parse_records(std::span<const std::uint8_t> content,
                                         bool allow_partial_tail, const std::string& where,
                                         OnRecord&& on_record) {
  std::uint64_t off = 0;
  const std::uint64_t size = content.size();
  while (off < size) {
    if (size - off < kRecordPrefixBytes) {
      if (allow_partial_tail) break;
      return std::unexpected(make_error(
          TraceErrorKind::kCorrupt,
          fmt::format("{}: {} stray bytes at content offset {} (a record needs {})", where,
                      size - off, off, kRecordPrefixBytes)));
    }
    const std::uint32_t len = get_u32(content.data() + off);
    const std::uint8_t kind = content[off + 4];
    if (len > kMaxRecordBytes) {
      return std::unexpected(make_error(
          TraceErrorKind::kTooLarge,
          fmt::format("{}: record at content offset {} claims {} bytes; the limit is {}", where,
                      off, len, kMaxRecordBytes)));
    }
    if (size - off - kRecordPrefixBytes < len) {
      if (allow_partial_tail) break;
      return std::unexpected(make_error(
          TraceErrorKind::kCorrupt,
          fmt::format("{}: record at content offset {} claims {} bytes; the frame ends after {}",
                      where, off, len, size - off - kRecordPrefixBytes)));
    }
    if (kind != static_cast<std::uint8_t>(RecordKind::kEvent) &&
        kind != static_cast<std::uint8_t>(RecordKind::kBlob)) {
      return std::unexpected(make_error(
          TraceErrorKind::kCorrupt,
          fmt::format("{}: record at content offset {} has unknown kind {}", where, off, kind)));
    }
    Record r{off, static_cast<RecordKind>(kind),
             content.subspan(static_cast<std::size_t>(off + kRecordPrefixBytes), len)};
    if (auto ok = on_record(r); !ok) return std::unexpected(ok.error());
    off += kRecordPrefixBytes + len;
  }
  return off;
}

TraceResult<BlobLoc> parse_blob_header(const Record& r, std::uint64_t frame_index,
                                       const std::string& where) {
  if (r.payload.size() < kBlobRecordHeaderBytes) {
    return std::unexpected(make_error(
        TraceErrorKind::kCorrupt,
        fmt::format("{}: blob record at content offset {} has {} bytes, less than its header",
                    where, r.offset, r.payload.size())));
  }
  const std::uint8_t* p = r.payload.data();
  BlobLoc b;
  b.id = BlobId{get_u64(p), get_u64(p + 8)};
  b.frame_index = frame_index;
  b.record_offset = r.offset;
  b.raw_bytes = get_u64(p + 16);
  b.stored_bytes = r.payload.size() - kBlobRecordHeaderBytes;
  if (b.raw_bytes > kMaxRecordBytes) {
    return std::unexpected(make_error(
        TraceErrorKind::kTooLarge,
        fmt::format("{}: payload {} claims {} decoded bytes; the limit is {}", where, b.id.hex(),
                    b.raw_bytes, kMaxRecordBytes)));
  }
  if (p[24] > static_cast<std::uint8_t>(BlobEncoding::kBytePlanes16)) {
    return std::unexpected(make_error(
        TraceErrorKind::kCorrupt,
        fmt::format("{}: payload {} has unknown encoding {}", where, b.id.hex(), p[24])));
  }
  b.encoding = static_cast<BlobEncoding>(p[24]);
  const bool sizes_ok = b.raw_bytes == b.stored_bytes &&
                        (b.encoding != BlobEncoding::kBytePlanes16 || b.raw_bytes % 2 == 0);
  if (!sizes_ok) {
    return std::unexpected(make_error(
        TraceErrorKind::kCorrupt,
        fmt::format("{}: payload {} claims {} decoded bytes but stores {} with encoding {}", where,
                    b.id.hex(), b.raw_bytes, b.stored_bytes, p[24])));
  }
  return b;
}

// Decodes the blob record and checks that its bytes hash to its id.
TraceResult<std::vector<std::uint8_t>> decode_blob(const BlobLoc& b, const Record& r,
                                                   const std::string& where) {
  std::span<const std::uint8_t> stored = r.payload.subspan(kBlobRecordHeaderBytes);
  std::vector<std::uint8_t> out(stored.size());
  if (b.encoding == BlobEncoding::kBytePlanes16) {
    decode_planes16(stored, out.data());
  } else if (!stored.empty()) {
    std::memcpy(out.data(), stored.data(), stored.size());
  }
  const BlobId got = blob_id_of(out.data(), out.size());
  if (got != b.id) {
    return std::unexpected(make_error(
        TraceErrorKind::kChecksumMismatch,
        fmt::format("{}: payload {} decodes to bytes whose XXH3-128 is {}", where, b.id.hex(),
                    got.hex())));
  }
  return out;
}

struct ScanMode {
  bool allow_cut = false;
  bool verify_events = false;
  bool check_blobs = false;
  bool stop_at_damage = false;  // salvage: a damaged frame ends the scan (ScanOut::damaged)
};

struct ScanOut {
  std::vector<FrameInfo> frames;
  std::vector<BlobId> compressed_hashes;
  std::vector<BlobLoc> blobs;  // sorted by id, first occurrence kept
  std::uint64_t events = 0;
  std::uint64_t data_end = 0;  // first byte not part of a complete data frame
  bool cut_frame = false;      // the last frame is cut (frames.back().complete == false)
  bool footer_seen = false;
  bool ends_cleanly = false;   // the scan reached `end` exactly on a frame boundary
  std::optional<DamagedFrame> damaged;  // stop_at_damage: the frame the scan stopped at
};

}  // namespace

struct TraceReader::Impl {
  std::unique_ptr<ByteSource> src;
  TraceReaderOptions opt;
  std::string name;
  TraceHeaderInfo header;
  RecoveryInfo recovery;
  bool footer_mode = false;
  std::vector<FrameInfo> frames;
  std::vector<BlobId> compressed_hashes;  // footer mode only
  std::vector<BlobLoc> blobs;             // sorted by id
  TraceTotals totals;
  std::uint64_t blob_references = 0;
  std::vector<std::uint8_t> summary;
  std::uint64_t data_begin = 0;
  std::uint64_t data_end = 0;
  // XXH3-128 of the header frame's content less its last 16 bytes (format 1.1's header hash
  // covers exactly these); compared with the footer's copy. Absent for a header under 24 bytes.
  std::optional<BlobId> header_prefix_hash;
  // Set when the trailer's footer checksum does not match: open() then recovered by scanning and
  // verify_all() reports this.
  std::optional<TraceError> footer_damage;
  ZSTD_DCtx* dctx = nullptr;
  std::uint64_t decompressions = 0;

  struct CacheEntry {
    std::uint64_t frame = std::numeric_limits<std::uint64_t>::max();
    std::shared_ptr<const std::vector<std::uint8_t>> content;
    std::uint64_t used = 0;
  };
  std::array<CacheEntry, 2> cache;
  std::uint64_t tick = 0;

  ~Impl() { ZSTD_freeDCtx(dctx); }

  std::string frame_where(std::uint64_t index, std::uint64_t offset) const {
    return fmt::format("{}: frame {} at offset {}", name, index, offset);
  }

  // Streams one zstd frame starting at `offset`, reading no further than `limit`.
  TraceResult<Decoded> decode(std::uint64_t index, std::uint64_t offset, std::uint64_t limit,
                              std::uint64_t expected_content) {
    ++decompressions;
    ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
    ZSTD_DCtx_setParameter(dctx, ZSTD_d_forceIgnoreChecksum,
                           opt.verify_checksums ? ZSTD_d_validateChecksum : ZSTD_d_ignoreChecksum);
    XXH3_state_t* hs = XXH3_createState();
    if (hs == nullptr) return std::unexpected(make_error(TraceErrorKind::kIo, "out of memory"));
    XXH3_128bits_reset(hs);
    struct Free {
      XXH3_state_t* s;
      ~Free() { XXH3_freeState(s); }
    } free_hs{hs};

    Decoded d;
    d.content.resize(static_cast<std::size_t>(std::min(expected_content, kFirstContentBytes)) +
                     kOutSlack);
    std::size_t produced = 0;
    // How much to give zstd next. First the frame header alone (ZSTD_nextInputType describes the
    // previous frame until the header is decoded), then zstd's own hint, but never the next
    // block's header together with the current block's content: each call then ends on a block
    // boundary, which is what makes `progress` exact.
    std::size_t want = kReadChunk;
    if (limit - offset >= ZSTD_FRAMEHEADERSIZE_PREFIX(ZSTD_f_zstd1)) {
      std::array<std::uint8_t, ZSTD_FRAMEHEADERSIZE_PREFIX(ZSTD_f_zstd1)> prefix{};
      if (auto r = src->read_at(offset, prefix); !r) return std::unexpected(r.error());
      const std::size_t hsize = ZSTD_frameHeaderSize(prefix.data(), prefix.size());
      if (!ZSTD_isError(hsize)) want = hsize;  // else zstd reports the damage on the first call
    }
    std::vector<std::uint8_t> in_buf(static_cast<std::size_t>(std::min<std::uint64_t>(kReadChunk, limit - offset)));
    std::uint64_t pos = offset;
    while (!d.complete && pos < limit) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(in_buf.size(), limit - pos));
      if (auto r = src->read_at(pos, std::span(in_buf.data(), n)); !r) return std::unexpected(r.error());
      std::size_t in_pos = 0;
      for (;;) {
        if (d.content.size() - produced < kOutSlack) {
          if (d.content.size() >= kMaxFrameContentBytes) {
            return std::unexpected(make_error(
                TraceErrorKind::kTooLarge,
                fmt::format("{} decompresses to more than {} bytes", frame_where(index, offset),
                            kMaxFrameContentBytes)));
          }
          d.content.resize(static_cast<std::size_t>(std::min<std::uint64_t>(
              kMaxFrameContentBytes, std::max(d.content.size() * 2, d.content.size() + kOutSlack))));
        }
        ZSTD_inBuffer in{in_buf.data(), in_pos + std::min(want, n - in_pos), in_pos};
        ZSTD_outBuffer o{d.content.data() + produced, d.content.size() - produced, 0};
        const std::size_t ret = ZSTD_decompressStream(dctx, &o, &in);
        if (ZSTD_isError(ret)) {
          const ZSTD_ErrorCode code = ZSTD_getErrorCode(ret);
          if (code == ZSTD_error_checksum_wrong) {
            return std::unexpected(make_error(
                TraceErrorKind::kChecksumMismatch,
                fmt::format("{}: the zstd content checksum does not match",
                            frame_where(index, offset))));
          }
          const TraceErrorKind kind = code == ZSTD_error_frameParameter_windowTooLarge
                                          ? TraceErrorKind::kTooLarge
                                          : TraceErrorKind::kCorrupt;
          return std::unexpected(make_error(
              kind, fmt::format("{} is corrupt: {}", frame_where(index, offset), ZSTD_getErrorName(ret))));
        }
        const bool moved = in.pos > in_pos || o.pos > 0;
        if (o.pos > 0) {
          d.progress.push_back(Decoded::Step{pos - offset + in_pos, pos - offset + in.pos, produced,
                                             produced + o.pos});
        }
        in_pos = in.pos;
        produced += o.pos;
        if (ret == 0) {
          d.complete = true;
          break;
        }
        if (!moved) {
          return std::unexpected(make_error(
              TraceErrorKind::kCorrupt,
              fmt::format("{}: zstd makes no progress at compressed byte {}",
                          frame_where(index, offset), pos - offset + in_pos)));
        }
        want = ret;
        if (ZSTD_nextInputType(dctx) == ZSTDnit_block && want > kZstdBlockHeaderBytes) {
          want -= kZstdBlockHeaderBytes;
        }
        if (in_pos == n && o.pos < o.size) break;  // needs more input
      }
      XXH3_128bits_update(hs, in_buf.data(), in_pos);
      pos += in_pos;
    }
    d.consumed = pos - offset;
    d.content.resize(produced);
    d.compressed_hash = from_xxh(XXH3_128bits_digest(hs));
    return d;
  }

  TraceResult<std::shared_ptr<const std::vector<std::uint8_t>>> frame_content(std::uint64_t fi) {
    for (auto& c : cache) {
      if (c.frame == fi && c.content) {
        c.used = ++tick;
        return c.content;
      }
    }
    const FrameInfo& f = frames[fi];
    const std::string where = frame_where(fi, f.file_offset);
    auto d = decode(fi, f.file_offset, f.file_offset + f.compressed_bytes, f.content_bytes);
    if (!d) return std::unexpected(d.error());
    if (f.complete) {
      if (!d->complete) {
        return std::unexpected(make_error(
            TraceErrorKind::kCorrupt,
            fmt::format("{}: the zstd frame does not end within its {} indexed bytes", where,
                        f.compressed_bytes)));
      }
      if (d->consumed != f.compressed_bytes || d->content.size() != f.content_bytes) {
        return std::unexpected(make_error(
            TraceErrorKind::kCorrupt,
            fmt::format("{}: the frame has {} compressed and {} content bytes; the index says {} "
                        "and {}", where, d->consumed, d->content.size(), f.compressed_bytes,
                        f.content_bytes)));
      }
      if (opt.verify_checksums) {
        if (footer_mode && d->compressed_hash != compressed_hashes[fi]) {
          return std::unexpected(make_error(
              TraceErrorKind::kChecksumMismatch,
              fmt::format("{}: the compressed bytes do not match the footer's XXH3-128", where)));
        }
        const BlobId h = blob_id_of(d->content.data(), d->content.size());
        if (h != f.content_hash) {
          return std::unexpected(make_error(
              TraceErrorKind::kChecksumMismatch,
              fmt::format("{}: the decompressed content does not match its XXH3-128", where)));
        }
      }
    } else {
      if (d->content.size() < f.content_bytes) {
        return std::unexpected(make_error(
            TraceErrorKind::kCorrupt,
            fmt::format("{}: the cut frame now decodes to {} bytes, fewer than the {} recovered",
                        where, d->content.size(), f.content_bytes)));
      }
      d->content.resize(static_cast<std::size_t>(f.content_bytes));
    }
    auto content = std::make_shared<const std::vector<std::uint8_t>>(std::move(d->content));
    CacheEntry& victim = cache[0].used <= cache[1].used ? cache[0] : cache[1];
    victim = CacheEntry{fi, content, ++tick};
    return content;
  }

  // Decodes the data frames in [begin, end). See ScanMode. The blob index comes back sorted by
  // id (first occurrence kept) however the scan ends: blob() bisects it.
  TraceResult<ScanOut> scan(std::uint64_t begin, std::uint64_t end, ScanMode mode) {
    auto out = scan_frames(begin, end, mode);
    if (!out) return out;
    std::stable_sort(out->blobs.begin(), out->blobs.end(),
                     [](const BlobLoc& a, const BlobLoc& b) { return a.id < b.id; });
    out->blobs.erase(std::unique(out->blobs.begin(), out->blobs.end(),
                                 [](const BlobLoc& a, const BlobLoc& b) { return a.id == b.id; }),
                     out->blobs.end());
    return out;
  }

  // scan() without the sorting: the blob index is in file order.
  TraceResult<ScanOut> scan_frames(std::uint64_t begin, std::uint64_t end, ScanMode mode) {
    ScanOut out;
    std::uint64_t pos = begin;
    std::uint64_t payload_events = 0;
    while (pos < end) {
      if (end - pos < 8) {
        // Too short for any frame header of ours; a cut file, or garbage.
        if (!mode.allow_cut) break;
        out.data_end = pos;
        return out;
      }
      std::array<std::uint8_t, 8> head{};
      if (auto r = src->read_at(pos, head); !r) return std::unexpected(r.error());
      const std::uint32_t magic = get_u32(head.data());
      if (is_skippable_magic(magic)) {
        const std::uint64_t size = get_u32(head.data() + 4);
        if (magic == kFooterSkippableMagic) {
          out.footer_seen = true;
          out.data_end = pos;
          out.ends_cleanly = pos + 8 + size == end;
          return out;
        }
        if (end - pos - 8 < size) {
          if (!mode.allow_cut) break;
          out.data_end = pos;
          return out;
        }
        pos += 8 + size;
        continue;
      }
      const std::uint64_t fi = out.frames.size();
      // With stop_at_damage, a frame that fails a check ends the scan where it starts (a read
      // error of the source still fails it).
      const auto damaged = [&](TraceError error) -> TraceResult<ScanOut> {
        if (!mode.stop_at_damage || error.kind == TraceErrorKind::kIo) {
          return std::unexpected(std::move(error));
        }
        out.damaged = DamagedFrame{fi, pos, std::move(error)};
        out.data_end = pos;
        return std::move(out);
      };
      if (magic != kZstdFrameMagic) {
        return damaged(make_error(
            TraceErrorKind::kCorrupt,
            fmt::format("{}: no zstd frame at offset {} (magic {:#010x})", name, pos, magic)));
      }
      const std::string where = frame_where(fi, pos);
      auto d = decode(fi, pos, end, 0);
      if (!d) return damaged(d.error());
      if (!d->complete && !mode.allow_cut) {
        return std::unexpected(make_error(
            TraceErrorKind::kTruncated, fmt::format("{}: the frame is cut at offset {}", where, end)));
      }
      FrameInfo info;
      info.file_offset = pos;
      info.first_event = out.events;
      info.complete = d->complete;
      std::vector<BlobLoc> found;
      auto parsed = parse_records(d->content, !d->complete, where, [&](const Record& r) -> TraceResult<void> {
        if (r.kind == RecordKind::kEvent) {
          if (mode.verify_events && !opt.verify_event(r.payload)) {
            return std::unexpected(make_error(
                TraceErrorKind::kVerifyFailed,
                fmt::format("{}: event {} fails the FlatBuffers verifier", where,
                            out.events + info.event_count)));
          }
          ++info.event_count;
          return {};
        }
        auto b = parse_blob_header(r, fi, where);
        if (!b) return std::unexpected(b.error());
        if (mode.check_blobs) {
          if (auto decoded = decode_blob(*b, r, where); !decoded) return std::unexpected(decoded.error());
        }
        ++info.blob_count;
        found.push_back(*b);
        return {};
      });
      if (!parsed) return damaged(parsed.error());
      info.content_bytes = *parsed;
      // A cut frame counts the compressed bytes of its recovered prefix only, so that content
      // and compressed bytes describe the same data (totals(), `vtrace info`).
      info.compressed_bytes = d->complete ? d->consumed : d->compressed_for(*parsed);
      info.content_hash = blob_id_of(d->content.data(), static_cast<std::size_t>(*parsed));
      out.events += info.event_count;
      payload_events += info.event_count;
      for (const auto& b : found) out.blobs.push_back(b);
      out.frames.push_back(info);
      out.compressed_hashes.push_back(d->compressed_hash);
      if (!d->complete) {
        out.cut_frame = true;
        out.data_end = pos;
        return out;
      }
      pos += d->consumed;
    }
    out.data_end = pos;
    out.ends_cleanly = pos == end;
    return out;
  }

  TraceResult<void> read_header() {
    const std::uint64_t size = src->size();
    std::array<std::uint8_t, 8> head{};
    if (size < head.size()) {
      return std::unexpected(make_error(
          TraceErrorKind::kNotATrace, fmt::format("{} has {} bytes: no vtrace header", name, size)));
    }
    if (auto r = src->read_at(0, head); !r) return std::unexpected(r.error());
    if (get_u32(head.data()) != kHeaderSkippableMagic) {
      return std::unexpected(make_error(
          TraceErrorKind::kNotATrace,
          fmt::format("{} does not start with a vtrace header frame", name)));
    }
    const std::uint64_t hsize = get_u32(head.data() + 4);
    if (hsize > kMaxHeaderBytes) {
      return std::unexpected(make_error(
          TraceErrorKind::kTooLarge, fmt::format("{}: the header frame claims {} bytes; the limit is {}",
                                                 name, hsize, kMaxHeaderBytes)));
    }
    if (hsize > size - 8) {
      return std::unexpected(make_error(
          TraceErrorKind::kTruncated,
          fmt::format("{}: the header frame claims {} bytes; the file ends after {}", name, hsize,
                      size - 8)));
    }
    if (hsize < kHeaderMagic.size()) {
      return std::unexpected(make_error(
          TraceErrorKind::kNotATrace, fmt::format("{}: the header frame is too short", name)));
    }
    std::vector<std::uint8_t> content(static_cast<std::size_t>(hsize));
    if (auto r = src->read_at(8, content); !r) return std::unexpected(r.error());
    if (!std::equal(kHeaderMagic.begin(), kHeaderMagic.end(), content.begin(),
                    [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; })) {
      return std::unexpected(make_error(
          TraceErrorKind::kNotATrace, fmt::format("{}: the header frame lacks the vtrace magic", name)));
    }
    // Format 1.1: the content ends with the XXH3-128 of what precedes it. Whether it does is
    // known before the table is read; the table then says whether it had to (minor >= 1).
    bool hashed = false;
    if (content.size() >= kHeaderMagic.size() + kHeaderHashBytes) {
      const std::size_t body = content.size() - kHeaderHashBytes;
      header_prefix_hash = header_hash_of(std::span<const std::uint8_t>(content).first(body));
      hashed = header_prefix_hash->low == get_u64(content.data() + body) &&
               header_prefix_hash->high == get_u64(content.data() + body + 8);
    }
    const auto header_damaged = [&] {
      return std::unexpected(make_error(
          TraceErrorKind::kChecksumMismatch,
          fmt::format("{}: {}", name, kHeaderDamage)));
    };
    // A copy keeps the table at an aligned address. A 1.0 header has no hash: its table runs to
    // the end of the content.
    std::vector<std::uint8_t> table(content.begin() + 8,
                                    content.end() - (hashed ? kHeaderHashBytes : 0));
    flatbuffers::Verifier verifier(table.data(), table.size(), kMaxFlatbufferDepth, kMaxFlatbufferTables);
    if (!verifier.VerifyBuffer<container::Header>(nullptr)) {
      return std::unexpected(make_error(
          TraceErrorKind::kVerifyFailed, fmt::format("{}: the header table fails the verifier", name)));
    }
    const auto* h = flatbuffers::GetRoot<container::Header>(table.data());
    header.format_major = h->format_major();
    header.format_minor = h->format_minor();
    if (header.format_major != kFormatMajor) {
      return std::unexpected(make_error(
          TraceErrorKind::kUnsupportedVersion,
          fmt::format("{} was written by format {}.{}; this reader reads {}.x", name,
                      header.format_major, header.format_minor, kFormatMajor)));
    }
    if (header.format_minor >= kFirstChecksummedMinor && !hashed) return header_damaged();
    header.producer = h->producer() ? h->producer()->str() : std::string();
    header.producer_version = h->producer_version() ? h->producer_version()->str() : std::string();
    if (h->metadata()) header.metadata.assign(h->metadata()->begin(), h->metadata()->end());
    data_begin = 8 + hsize;
    return {};
  }

  // Returns false (and no error) when the file has no trailer: the caller then scans.
  TraceResult<bool> read_footer() {
    const std::uint64_t size = src->size();
    if (size < data_begin + 8 + kTrailerBytes) return false;
    std::array<std::uint8_t, kTrailerBytes> trailer{};
    if (auto r = src->read_at(size - kTrailerBytes, trailer); !r) return std::unexpected(r.error());
    if (!std::equal(kTrailerMagic.begin(), kTrailerMagic.end(), trailer.begin() + 24,
                    [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; })) {
      return false;
    }
    const std::uint64_t foff = get_u64(trailer.data());
    const std::uint64_t fsize = get_u64(trailer.data() + 8);
    auto corrupt = [&](std::string what) {
      return std::unexpected(make_error(TraceErrorKind::kCorrupt, fmt::format("{}: {}", name, what)));
    };
    if (fsize > kMaxFooterBytes + 8) {
      return std::unexpected(make_error(
          TraceErrorKind::kTooLarge, fmt::format("{}: the trailer claims a {}-byte footer; the limit is {}",
                                                 name, fsize, kMaxFooterBytes)));
    }
    if (fsize < 8 + kTrailerBytes || foff < data_begin || foff > size || size - foff != fsize) {
      return corrupt(fmt::format("the trailer's footer (offset {}, {} bytes) does not end the {}-byte file",
                                 foff, fsize, size));
    }
    std::vector<std::uint8_t> frame(static_cast<std::size_t>(fsize));
    if (auto r = src->read_at(foff, frame); !r) return std::unexpected(r.error());
    if (get_u32(frame.data()) != kFooterSkippableMagic || get_u32(frame.data() + 4) != fsize - 8) {
      return corrupt(fmt::format("no footer frame of {} bytes at offset {}", fsize, foff));
    }
    std::vector<std::uint8_t> table(frame.begin() + 8, frame.end() - kTrailerBytes);
    // Format 1.1: the trailer's third u64 is the XXH3-64 of the footer table (0 = not checked).
    // A footer that does not match it is not trusted: open() scans the data frames instead
    // (recover()), and verify_all() reports the damage.
    const std::uint64_t checksum = get_u64(trailer.data() + 16);
    if (checksum != 0 && checksum != footer_checksum_of(table)) {
      footer_damage = make_error(
          TraceErrorKind::kChecksumMismatch,
          fmt::format("{}: the footer frame at offset {} does not match its checksum", name, foff));
      return false;
    }
    flatbuffers::Verifier verifier(table.data(), table.size(), kMaxFlatbufferDepth, kMaxFlatbufferTables);
    if (!verifier.VerifyBuffer<container::Footer>(nullptr)) {
      return std::unexpected(make_error(
          TraceErrorKind::kVerifyFailed, fmt::format("{}: the footer table fails the verifier", name)));
    }
    const auto* f = flatbuffers::GetRoot<container::Footer>(table.data());
    if (f->frames() == nullptr || f->blobs() == nullptr || f->totals() == nullptr) {
      return corrupt("the footer lacks its frame index, blob index or totals");
    }
    if (!elements_aligned(f->frames()) || !elements_aligned(f->blobs())) {
      return corrupt("the footer's frame or blob index is not 8-byte aligned");
    }
    // Format 1.1: the footer's copy of the header hash catches a damaged header that no longer
    // says minor >= 1 (and so hides its own hash).
    if (const container::Hash128* hh = f->header_hash(); hh != nullptr) {
      if (!header_prefix_hash || *header_prefix_hash != from_fb(*hh)) {
        return std::unexpected(make_error(
            TraceErrorKind::kChecksumMismatch,
            fmt::format("{}: {} (the footer's copy)", name, kHeaderDamage)));
      }
    }
    std::uint64_t expect_offset = data_begin;
    std::uint64_t events = 0;
    for (flatbuffers::uoffset_t i = 0; i < f->frames()->size(); ++i) {
      const container::FrameEntry* e = f->frames()->Get(i);
      if (e->file_offset() != expect_offset || e->compressed_bytes() == 0 ||
          e->compressed_bytes() > foff - e->file_offset()) {
        return corrupt(fmt::format("the footer's frame {} (offset {}, {} bytes) lies outside the "
                                   "data frames, which span offsets {} to {}", i, e->file_offset(),
                                   e->compressed_bytes(), data_begin, foff));
      }
      if (e->content_bytes() > kMaxFrameContentBytes) {
        return std::unexpected(make_error(
            TraceErrorKind::kTooLarge,
            fmt::format("{}: the footer's frame {} claims {} content bytes; the limit is {}", name,
                        i, e->content_bytes(), kMaxFrameContentBytes)));
      }
      const std::uint64_t max_records = e->content_bytes() / kRecordPrefixBytes;
      if (e->first_event() != events || e->event_count() > max_records ||
          e->blob_count() > max_records) {
        return corrupt(fmt::format("the footer's frame {} claims events from {} ({} of them) and "
                                   "{} blobs; expected events from {}", i, e->first_event(),
                                   e->event_count(), e->blob_count(), events));
      }
      FrameInfo info{e->file_offset(), e->compressed_bytes(), e->content_bytes(), e->first_event(),
                     e->event_count(), e->blob_count(), from_fb(e->content_hash()), true};
      frames.push_back(info);
      compressed_hashes.push_back(from_fb(e->compressed_hash()));
      events += e->event_count();
      expect_offset += e->compressed_bytes();
    }
    if (expect_offset != foff) {
      return corrupt(fmt::format("the footer's frames end at offset {}, not at the footer ({})",
                                 expect_offset, foff));
    }
    const container::Totals* t = f->totals();
    if (t->events() != events || t->blobs() != f->blobs()->size()) {
      return corrupt(fmt::format("the footer's totals ({} events, {} blobs) disagree with its "
                                 "indexes ({} events, {} blobs)", t->events(), t->blobs(), events,
                                 f->blobs()->size()));
    }
    for (flatbuffers::uoffset_t i = 0; i < f->blobs()->size(); ++i) {
      const container::BlobEntry* e = f->blobs()->Get(i);
      BlobLoc b{from_fb(e->id()), e->frame_index(), e->record_offset(), e->raw_bytes(),
                e->stored_bytes(), static_cast<BlobEncoding>(e->encoding())};
      if (b.raw_bytes > kMaxRecordBytes || b.stored_bytes > kMaxRecordBytes) {
        return std::unexpected(make_error(
            TraceErrorKind::kTooLarge,
            fmt::format("{}: the footer's payload {} claims {} bytes; the limit is {}", name,
                        b.id.hex(), std::max(b.raw_bytes, b.stored_bytes), kMaxRecordBytes)));
      }
      const bool in_frame =
          b.frame_index < frames.size() &&
          b.record_offset <= frames[b.frame_index].content_bytes &&
          frames[b.frame_index].content_bytes - b.record_offset >=
              kRecordPrefixBytes + kBlobRecordHeaderBytes + b.stored_bytes;
      if (!in_frame || e->encoding() > static_cast<std::uint8_t>(BlobEncoding::kBytePlanes16) ||
          (!blobs.empty() && !(blobs.back().id < b.id))) {
        return corrupt(fmt::format("the footer's payload {} (frame {}, content offset {}) lies "
                                   "outside its frame or out of order", b.id.hex(), b.frame_index,
                                   b.record_offset));
      }
      blobs.push_back(b);
    }
    totals.events = events;
    totals.blobs = blobs.size();
    totals.payload_raw_bytes = t->payload_raw_bytes();
    totals.payload_stored_bytes = t->payload_stored_bytes();
    totals.compressed_bytes = foff - data_begin;
    totals.file_bytes = size;
    blob_references = t->blob_references();
    if (f->summary()) summary.assign(f->summary()->begin(), f->summary()->end());
    data_end = foff;
    footer_mode = true;
    recovery = RecoveryInfo{true, events, size, size, {}, std::nullopt};
    return true;
  }

  TraceResult<void> recover() {
    const std::uint64_t size = src->size();
    const bool salvage = opt.salvage;
    auto s = scan(data_begin, size, ScanMode{true, salvage, salvage, salvage});
    if (!s) return std::unexpected(s.error());
    frames = std::move(s->frames);
    blobs = std::move(s->blobs);
    data_end = s->data_end;
    totals.events = s->events;
    totals.blobs = blobs.size();
    for (const auto& b : blobs) {
      totals.payload_raw_bytes += b.raw_bytes;
      totals.payload_stored_bytes += b.stored_bytes;
    }
    for (const auto& f : frames) totals.compressed_bytes += f.compressed_bytes;
    totals.file_bytes = size;
    recovery.footer_present = false;
    recovery.events_recovered = s->events;
    recovery.cut_offset = s->data_end;
    recovery.file_bytes = size;
    std::uint64_t whole = 0;
    for (const auto& f : frames) whole += f.complete ? 1 : 0;
    recovery.damaged = s->damaged;
    if (s->damaged) {
      recovery.note = fmt::format("{} (recovered {} events from the {} complete frames before it)",
                                  s->damaged->error.message, s->events, whole);
    } else if (footer_damage) {
      recovery.note = fmt::format(
          "{}: the footer at offset {} is damaged (it does not match its checksum): recovered {} "
          "events from {} complete frames by scanning", name, s->data_end, s->events, whole);
    } else if (s->cut_frame) {
      const FrameInfo& last = frames.back();
      recovery.note = fmt::format(
          "{} has no footer and is cut inside frame {} (offset {}): recovered {} events from {} "
          "complete frames and {} from the cut frame's decodable prefix",
          name, frames.size() - 1, last.file_offset, s->events, whole, last.event_count);
    } else if (s->footer_seen) {
      recovery.note = fmt::format(
          "{}: the footer at offset {} is cut or damaged: recovered {} events from {} complete "
          "frames", name, s->data_end, s->events, whole);
    } else {
      recovery.note = fmt::format(
          "{} has no footer (the recording did not finish{}): recovered {} events from {} "
          "complete frames", name, s->ends_cleanly ? "" : fmt::format("; cut at offset {}", s->data_end),
          s->events, whole);
    }
    return {};
  }
};

TraceReader::TraceReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceReader::~TraceReader() = default;

TraceResult<std::unique_ptr<TraceReader>> TraceReader::open(std::unique_ptr<ByteSource> source,
                                                            TraceReaderOptions options) {
  if (!source) return std::unexpected(make_error(TraceErrorKind::kIo, "TraceReader::open: no source"));
  auto impl = std::make_unique<Impl>();
  impl->name = source->describe();
  impl->src = std::move(source);
  impl->opt = std::move(options);
  if (!impl->opt.verify_event) impl->opt.verify_event = verify_event_record;
  impl->dctx = ZSTD_createDCtx();
  if (impl->dctx == nullptr) return std::unexpected(make_error(TraceErrorKind::kIo, "out of memory"));
  if (auto r = impl->read_header(); !r) return std::unexpected(r.error());
  // Salvage never trusts the footer: it scans and checks every frame.
  auto footer = impl->opt.salvage ? TraceResult<bool>(false) : impl->read_footer();
  if (!footer) return std::unexpected(footer.error());
  if (!*footer) {
    if (auto r = impl->recover(); !r) return std::unexpected(r.error());
  }
  return std::unique_ptr<TraceReader>(new TraceReader(std::move(impl)));
}

TraceResult<std::unique_ptr<TraceReader>> TraceReader::open(const std::filesystem::path& path,
                                                            TraceReaderOptions options) {
  auto src = open_file_source(path);
  if (!src) return std::unexpected(src.error());
  return open(std::move(*src), std::move(options));
}

const TraceHeaderInfo& TraceReader::header() const { return impl_->header; }
bool is_header_damage(const TraceError& error) {
  return error.kind == TraceErrorKind::kChecksumMismatch &&
         error.message.find(kHeaderDamage) != std::string::npos;
}

bool TraceReader::complete() const { return impl_->footer_mode; }
const RecoveryInfo& TraceReader::recovery() const { return impl_->recovery; }
const std::vector<FrameInfo>& TraceReader::frames() const { return impl_->frames; }
TraceTotals TraceReader::totals() const { return impl_->totals; }
std::uint64_t TraceReader::event_count() const { return impl_->totals.events; }
std::span<const std::uint8_t> TraceReader::summary() const { return impl_->summary; }
std::uint64_t TraceReader::frames_decompressed() const { return impl_->decompressions; }

TraceResult<void> TraceReader::visit_events(std::uint64_t first, std::uint64_t last,
                                            const EventVisitor& visit) {
  Impl& m = *impl_;
  std::vector<std::uint64_t> scratch;  // 8-byte aligned storage for an unaligned event
  auto aligned_event = [&scratch](std::span<const std::uint8_t> bytes) {
    if (reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(std::uint64_t) == 0) return bytes;
    scratch.resize((bytes.size() + 7) / 8);
    std::memcpy(scratch.data(), bytes.data(), bytes.size());
    return std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(scratch.data()),
                                         bytes.size());
  };
  last = std::min(last, m.totals.events);
  if (first >= last) return {};
  auto it = std::upper_bound(m.frames.begin(), m.frames.end(), first,
                             [](std::uint64_t v, const FrameInfo& f) { return v < f.first_event; });
  std::uint64_t fi = static_cast<std::uint64_t>(it - m.frames.begin()) - 1;
  for (; fi < m.frames.size(); ++fi) {
    const FrameInfo& f = m.frames[fi];
    if (f.first_event >= last) break;
    if (f.event_count == 0 || f.first_event + f.event_count <= first) continue;
    auto content = m.frame_content(fi);
    if (!content) return std::unexpected(content.error());
    const std::string where = m.frame_where(fi, f.file_offset);
    std::uint64_t ordinal = f.first_event;
    bool stop = false;
    auto parsed = parse_records(**content, false, where, [&](const Record& r) -> TraceResult<void> {
      if (stop || r.kind != RecordKind::kEvent) return {};
      const std::uint64_t n = ordinal++;
      if (n < first) return {};
      if (n >= last) {
        stop = true;
        return {};
      }
      // A record's payload starts wherever the record header ends; FlatBuffers reads its scalars
      // in place and needs the buffer 8-byte aligned, so an unaligned event is read from a copy.
      const std::span<const std::uint8_t> event = aligned_event(r.payload);
      if (!m.opt.verify_event(event)) {
        return std::unexpected(make_error(
            TraceErrorKind::kVerifyFailed,
            fmt::format("{}: event {} fails the FlatBuffers verifier", where, n)));
      }
      if (!visit(n, event)) stop = true;
      return {};
    });
    if (!parsed) return std::unexpected(parsed.error());
    if (stop) return {};
    if (ordinal != f.first_event + f.event_count) {
      return std::unexpected(make_error(
          TraceErrorKind::kCorrupt, fmt::format("{}: holds {} events; the index says {}", where,
                                                ordinal - f.first_event, f.event_count)));
    }
  }
  return {};
}

TraceResult<std::vector<std::uint8_t>> TraceReader::blob(const BlobId& id) {
  Impl& m = *impl_;
  auto it = std::lower_bound(m.blobs.begin(), m.blobs.end(), id,
                             [](const BlobLoc& b, const BlobId& v) { return b.id < v; });
  if (it == m.blobs.end() || it->id != id) {
    return std::unexpected(make_error(TraceErrorKind::kMissingBlob,
                                      fmt::format("{} holds no payload {}", m.name, id.hex())));
  }
  const BlobLoc loc = *it;
  auto content = m.frame_content(loc.frame_index);
  if (!content) return std::unexpected(content.error());
  const std::vector<std::uint8_t>& c = **content;
  const std::string where = m.frame_where(loc.frame_index, m.frames[loc.frame_index].file_offset);
  const bool fits = loc.record_offset <= c.size() && c.size() - loc.record_offset >= kRecordPrefixBytes;
  const std::uint64_t len = fits ? get_u32(c.data() + loc.record_offset) : 0;
  if (!fits || len > c.size() - loc.record_offset - kRecordPrefixBytes ||
      c[loc.record_offset + 4] != static_cast<std::uint8_t>(RecordKind::kBlob)) {
    return std::unexpected(make_error(
        TraceErrorKind::kCorrupt,
        fmt::format("{}: no blob record at content offset {} for payload {}", where,
                    loc.record_offset, id.hex())));
  }
  Record r{loc.record_offset, RecordKind::kBlob,
           std::span(c).subspan(static_cast<std::size_t>(loc.record_offset + kRecordPrefixBytes),
                                static_cast<std::size_t>(len))};
  auto b = parse_blob_header(r, loc.frame_index, where);
  if (!b) return std::unexpected(b.error());
  if (b->id != loc.id || b->raw_bytes != loc.raw_bytes || b->encoding != loc.encoding) {
    return std::unexpected(make_error(
        TraceErrorKind::kCorrupt,
        fmt::format("{}: the record at content offset {} holds payload {}, not the indexed {}",
                    where, loc.record_offset, b->id.hex(), id.hex())));
  }
  return decode_blob(*b, r, where);
}

std::optional<BlobEncoding> TraceReader::blob_encoding(const BlobId& id) const {
  const auto& blobs = impl_->blobs;
  auto it = std::lower_bound(blobs.begin(), blobs.end(), id,
                             [](const BlobLoc& b, const BlobId& v) { return b.id < v; });
  if (it == blobs.end() || it->id != id) return std::nullopt;
  return it->encoding;
}

TraceResult<void> TraceReader::verify_all() {
  Impl& m = *impl_;
  const std::uint64_t end = m.footer_mode ? m.data_end : m.src->size();
  auto s = m.scan(m.data_begin, end, ScanMode{!m.footer_mode, true, true});
  if (!s) return std::unexpected(s.error());
  if (m.footer_mode && !s->ends_cleanly) {
    return std::unexpected(make_error(
        TraceErrorKind::kCorrupt,
        fmt::format("{}: the data frames end at offset {}, not at the footer ({})", m.name,
                    s->data_end, m.data_end)));
  }
  if (s->frames.size() != m.frames.size()) {
    return std::unexpected(make_error(
        TraceErrorKind::kCorrupt, fmt::format("{}: {} data frames found; the index lists {}",
                                              m.name, s->frames.size(), m.frames.size())));
  }
  for (std::size_t i = 0; i < m.frames.size(); ++i) {
    const FrameInfo& a = s->frames[i];
    const FrameInfo& b = m.frames[i];
    const bool same = a.file_offset == b.file_offset && a.compressed_bytes == b.compressed_bytes &&
                      a.content_bytes == b.content_bytes && a.first_event == b.first_event &&
                      a.event_count == b.event_count && a.blob_count == b.blob_count &&
                      a.complete == b.complete;
    if (!same) {
      return std::unexpected(make_error(
          TraceErrorKind::kCorrupt,
          fmt::format("{}: the index entry disagrees with the frame found there",
                      m.frame_where(i, b.file_offset))));
    }
    const bool hashes_ok = a.content_hash == b.content_hash &&
                           (!m.footer_mode || s->compressed_hashes[i] == m.compressed_hashes[i]);
    if (m.opt.verify_checksums && !hashes_ok) {
      return std::unexpected(make_error(
          TraceErrorKind::kChecksumMismatch,
          fmt::format("{}: the frame's XXH3-128 does not match the footer's",
                      m.frame_where(i, b.file_offset))));
    }
  }
  if (s->blobs != m.blobs) {
    return std::unexpected(make_error(
        TraceErrorKind::kCorrupt,
        fmt::format("{}: the blob index ({} payloads) disagrees with the {} blob records found",
                    m.name, m.blobs.size(), s->blobs.size())));
  }
  if (m.footer_damage) return std::unexpected(*m.footer_damage);
  if (!m.footer_mode) {
    return std::unexpected(make_error(TraceErrorKind::kTruncated, m.recovery.note));
  }
  return {};
}

}  // namespace vtrace::schema
