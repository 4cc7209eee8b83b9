// All file I/O of the trace layer goes through these two interfaces, so tests (and later fault
// injection) can replace the file system. FileSink writes "<path>.partial" and renames it to
// <path> on commit(); FileSource reads a whole file or ranges of it.
//
// Ownership: the opening functions return objects their caller owns (or hands on: TraceWriter
//   and TraceReader take theirs over). A file sink or source owns its file descriptor
//   (open_file_sink's also its folder's, for the rename) and closes it when destroyed. A file
//   sink destroyed without commit() leaves what it wrote on disk (open_file_sink: the .partial
//   file, a cut, recoverable trace); an open_file_sink sink destroyed having written nothing
//   removes its own, still empty .partial file (nothing to recover), and no other file. A file source reads the file it
//   opened, at the size it had then, even if the name is later replaced. memory_source() owns
//   the bytes moved into it. write() keeps no reference to its bytes.
// Thread rules: one thread at a time per object.
// Errors: TraceErrorKind::kIo naming the path: a failed system call with the OS's reason
//   (strerror), or a refusal (a path that is not a regular file, a sink already committed).
//   read_at past the end or a file that shrank: kTruncated.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "vtrace/schema/trace_error.h"

namespace vtrace::schema {

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual TraceResult<void> write(std::span<const std::uint8_t> bytes) = 0;
  virtual TraceResult<void> flush() = 0;  // push written bytes to the OS
  // Makes the output final (FileSink: fsync + rename .partial -> final name).
  virtual TraceResult<void> commit() = 0;
  virtual std::uint64_t bytes_written() const = 0;
  virtual std::string describe() const = 0;  // for messages: the final path
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::uint64_t size() const = 0;
  // Reads exactly out.size() bytes at offset; kTruncated if the source is shorter.
  virtual TraceResult<void> read_at(std::uint64_t offset, std::span<std::uint8_t> out) const = 0;
  virtual std::string describe() const = 0;
};

// Writes to "<path><temporary_suffix>" (".partial" unless told: `vtrace repair` writes
// ".repairing", as its input is often a .partial); commit() renames it to `path`. Refuses (kIo) a
// `path` that exists and is not a regular file: the rename would replace a device node or a
// directory. Refuses (kIo) a temporary file that exists and is not a regular file (a symbolic link,
// a FIFO, a directory): a leftover regular one is truncated, and a link would truncate what it
// points to.
TraceResult<std::unique_ptr<ByteSink>> open_file_sink(
    const std::filesystem::path& path, std::string_view temporary_suffix = ".partial");
// Writes to exactly `path` from its start (for /dev/full and pipes in tests): a regular file
// there is truncated. commit() only closes; nothing is ever removed.
TraceResult<std::unique_ptr<ByteSink>> open_raw_file_sink(const std::filesystem::path& path);
TraceResult<std::unique_ptr<ByteSource>> open_file_source(const std::filesystem::path& path);
std::unique_ptr<ByteSource> memory_source(std::vector<std::uint8_t> bytes, std::string name);

}  // namespace vtrace::schema
