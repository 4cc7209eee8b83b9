// POSIX file sink and source. Plain syscalls rather than stdio: errno must reach the message, and
// the writer already buffers (one write per compressed chunk).
#include "vtrace/schema/byte_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace vtrace::schema {
namespace {

TraceError io_error(const std::string& what, const std::filesystem::path& path, int err) {
  return TraceError{TraceErrorKind::kIo,
                    fmt::format("{} {}: {}", what, path.string(), std::strerror(err))};
}

class FileSink final : public ByteSink {
 public:
  // `dir_fd`: the folder both names are in (rename mode), or -1; the sink owns it. The rename
  // goes through it, so a process that changes its working directory meanwhile still commits.
  FileSink(int fd, int dir_fd, std::filesystem::path write_path, std::filesystem::path final_path,
           bool rename)
      : fd_(fd), dir_fd_(dir_fd), write_path_(std::move(write_path)),
        final_path_(std::move(final_path)), rename_(rename) {}
  ~FileSink() override {
    // Without commit() the .partial file stays: it is a recoverable, cut trace. One this sink
    // never wrote to holds nothing to recover (a TraceWriter::create that failed, a disk full
    // before the header): it is removed, if the name still holds the file this sink opened.
    if (fd_ >= 0) {
      if (rename_ && written_ == 0) remove_own_temporary();
      ::close(fd_);
    }
    if (dir_fd_ >= 0) ::close(dir_fd_);
  }

  TraceResult<void> write(std::span<const std::uint8_t> bytes) override {
    if (fd_ < 0) return std::unexpected(closed_error());
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ::ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return std::unexpected(io_error("cannot write", write_path_, errno));
      }
      if (n == 0) return std::unexpected(io_error("cannot write", write_path_, ENOSPC));
      done += static_cast<std::size_t>(n);
      written_ += static_cast<std::uint64_t>(n);
    }
    return {};
  }
  TraceResult<void> flush() override {
    // Bytes go to the OS at each write(); nothing is buffered here.
    if (fd_ < 0) return std::unexpected(closed_error());
    return {};
  }
  TraceResult<void> commit() override {
    if (fd_ < 0) return std::unexpected(closed_error());
    if (rename_ && ::fsync(fd_) != 0) {
      return std::unexpected(io_error("cannot fsync", write_path_, errno));
    }
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return std::unexpected(io_error("cannot close", write_path_, errno));
    if (rename_ && ::renameat(dir_fd_, write_path_.filename().c_str(), dir_fd_,
                              final_path_.filename().c_str()) != 0) {
      return std::unexpected(TraceError{
          TraceErrorKind::kIo, fmt::format("cannot rename {} to {}: {}", write_path_.string(),
                                           final_path_.string(), std::strerror(errno))});
    }
    return {};
  }
  std::uint64_t bytes_written() const override { return written_; }
  std::string describe() const override { return final_path_.string(); }

 private:
  void remove_own_temporary() const {
    struct ::stat own {};
    struct ::stat named {};
    const std::string name = write_path_.filename().string();
    if (::fstat(fd_, &own) == 0 &&
        ::fstatat(dir_fd_, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
        own.st_dev == named.st_dev && own.st_ino == named.st_ino && own.st_size == 0) {
      (void)::unlinkat(dir_fd_, name.c_str(), 0);
    }
  }
  TraceError closed_error() const {
    return TraceError{TraceErrorKind::kIo, fmt::format("{} is already committed", describe())};
  }
  int fd_;
  int dir_fd_;
  std::filesystem::path write_path_;
  std::filesystem::path final_path_;
  bool rename_;
  std::uint64_t written_ = 0;
};

// A file descriptor closed when it goes out of scope, unless released to its new owner.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

TraceResult<std::unique_ptr<ByteSink>> open_sink(const std::filesystem::path& write_path,
                                                 const std::filesystem::path& final_path,
                                                 bool rename) {
  if (!rename) {
    // Written from its start: an existing regular file is truncated (a device or a pipe
    // ignores O_TRUNC), so no byte of what it held before is left after the trace.
    const int fd = ::open(write_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return std::unexpected(io_error("cannot create", write_path, errno));
    return std::make_unique<FileSink>(fd, -1, write_path, final_path, rename);
  }
  // Both names live in one folder, opened once: every later step goes through it.
  const std::filesystem::path folder =
      final_path.parent_path().empty() ? std::filesystem::path(".") : final_path.parent_path();
  Fd dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return std::unexpected(io_error("cannot create", write_path, errno));
  const std::string name = write_path.filename().string();
  // The temporary (.partial) file is ours to truncate, so it is opened only if it is a regular
  // file of its own: a symbolic link planted at that name (say in /tmp) must not truncate what it
  // points to, and a FIFO there must not block the open. The check names the case; O_NOFOLLOW,
  // O_NONBLOCK and the fstat below keep it true if the name changes between the check and the
  // open.
  struct ::stat before {};
  if (::fstatat(dir.get(), name.c_str(), &before, AT_SYMLINK_NOFOLLOW) == 0 &&
      !S_ISREG(before.st_mode)) {
    return std::unexpected(TraceError{
        TraceErrorKind::kIo,
        fmt::format("cannot create {}: it exists and is {}, and a trace is only written to a "
                    "regular file of its own (remove it or choose another name)",
                    write_path.string(),
                    S_ISLNK(before.st_mode) ? "a symbolic link" : "not a regular file")});
  }
  Fd fd(::openat(dir.get(), name.c_str(),
                 O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644));
  if (fd.get() < 0) return std::unexpected(io_error("cannot create", write_path, errno));
  struct ::stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return std::unexpected(TraceError{
        TraceErrorKind::kIo,
        fmt::format("cannot create {}: it exists and is not a regular file", write_path.string())});
  }
  const int status_flags = ::fcntl(fd.get(), F_GETFL);
  if (status_flags < 0 || ::fcntl(fd.get(), F_SETFL, status_flags & ~O_NONBLOCK) != 0) {
    return std::unexpected(io_error("cannot create", write_path, errno));
  }
  return std::make_unique<FileSink>(fd.release(), dir.release(), write_path, final_path, rename);
}

class FileSource final : public ByteSource {
 public:
  FileSource(int fd, std::uint64_t size, std::filesystem::path path)
      : fd_(fd), size_(size), path_(std::move(path)) {}
  ~FileSource() override { ::close(fd_); }
  std::uint64_t size() const override { return size_; }
  TraceResult<void> read_at(std::uint64_t offset, std::span<std::uint8_t> out) const override {
    if (offset > size_ || out.size() > size_ - offset) {
      return std::unexpected(TraceError{
          TraceErrorKind::kTruncated,
          fmt::format("{}: read of {} bytes at offset {} passes the end ({} bytes)",
                      path_.string(), out.size(), offset, size_)});
    }
    std::size_t done = 0;
    while (done < out.size()) {
      const ::ssize_t n = ::pread(fd_, out.data() + done, out.size() - done,
                                  static_cast<::off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return std::unexpected(io_error("cannot read", path_, errno));
      }
      if (n == 0) {
        return std::unexpected(TraceError{
            TraceErrorKind::kTruncated,
            fmt::format("{} ended early at offset {}", path_.string(), offset + done)});
      }
      done += static_cast<std::size_t>(n);
    }
    return {};
  }
  std::string describe() const override { return path_.string(); }

 private:
  int fd_;
  std::uint64_t size_;
  std::filesystem::path path_;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::vector<std::uint8_t> bytes, std::string name)
      : bytes_(std::move(bytes)), name_(std::move(name)) {}
  std::uint64_t size() const override { return bytes_.size(); }
  TraceResult<void> read_at(std::uint64_t offset, std::span<std::uint8_t> out) const override {
    if (offset > bytes_.size() || out.size() > bytes_.size() - offset) {
      return std::unexpected(TraceError{
          TraceErrorKind::kTruncated,
          fmt::format("{}: read of {} bytes at offset {} passes the end ({} bytes)", name_,
                      out.size(), offset, bytes_.size())});
    }
    if (!out.empty()) std::memcpy(out.data(), bytes_.data() + offset, out.size());
    return {};
  }
  std::string describe() const override { return name_; }

 private:
  std::vector<std::uint8_t> bytes_;
  std::string name_;
};

}  // namespace

TraceResult<std::unique_ptr<ByteSink>> open_file_sink(const std::filesystem::path& path,
                                                      std::string_view temporary_suffix) {
  // commit() renames over `path`: refuse anything but a regular file there, so a trace never
  // replaces a device node (/dev/full, /dev/null) or a directory.
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(path, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    return std::unexpected(TraceError{
        TraceErrorKind::kIo,
        fmt::format("{} exists and is {}; a trace is only written to a regular file",
                    path.string(),
                    std::filesystem::is_symlink(status)
                        ? "a symbolic link (the trace would replace the link, not its target)"
                        : "not a regular file")});
  }
  std::filesystem::path temporary = path;
  temporary += temporary_suffix;
  return open_sink(temporary, path, true);
}

TraceResult<std::unique_ptr<ByteSink>> open_raw_file_sink(const std::filesystem::path& path) {
  return open_sink(path, path, false);
}

TraceResult<std::unique_ptr<ByteSource>> open_file_source(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::unexpected(io_error("cannot open", path, errno));
  struct ::stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return std::unexpected(io_error("cannot stat", path, err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return std::unexpected(TraceError{TraceErrorKind::kIo,
                                      fmt::format("{} is not a regular file", path.string())});
  }
  return std::make_unique<FileSource>(fd, static_cast<std::uint64_t>(st.st_size), path);
}

std::unique_ptr<ByteSource> memory_source(std::vector<std::uint8_t> bytes, std::string name) {
  return std::make_unique<MemorySource>(std::move(bytes), std::move(name));
}

}  // namespace vtrace::schema
