// `vtrace repair`: a .partial left by an interrupted record, a recording cut at many offsets, a
// damaged middle frame, a damaged footer and an intact trace; the repaired file verifies and
// replays as far as the original did. And a payload changed behind valid frame checksums is
// refused by `verify` and `replay`, naming the payload.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "run_vtrace.h"
#include "schema/container_test_support.h"
#include "trace_fixtures.h"
#include "vtrace/schema/event_links.h"
#include "vtrace/schema/events.h"
#include "vtrace/schema/trace_reader.h"

namespace fs = std::filesystem;
namespace vs = vtrace::schema;
using vs::testing::Bytes;
using vtrace::test::run_shell;
using vtrace::test::run_vtrace;
using vtrace::test::ScratchDir;

namespace {

Bytes read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

// `vtrace replay T --json`'s executed count, and its exit code.
struct Replayed {
  int code = -1;
  std::uint64_t executed = 0;
};
Replayed replay_executed(const fs::path& trace, const fs::path& json) {
  auto run = run_vtrace(fmt::format("--quiet replay {} --json {}", trace.string(), json.string()));
  INFO(run.output);
  Replayed r{run.code, 0};
  if (run.code == 0) {
    std::ifstream in(json);
    r.executed = nlohmann::json::parse(in)["executed"].get<std::uint64_t>();
  }
  return r;
}

// `vtrace repair IN -o OUT` exits 0, `vtrace verify OUT` exits 0, and OUT replays the events
// IN replays. Returns repair's output.
std::string check_repair(const fs::path& in, const fs::path& out, const ScratchDir& dir) {
  auto repaired = run_vtrace(fmt::format("repair {} -o {}", in.string(), out.string()));
  INFO(repaired.output);
  REQUIRE(repaired.code == 0);
  CHECK_FALSE(fs::exists(out.string() + ".repairing"));
  auto verified = run_vtrace(fmt::format("verify {}", out.string()));
  INFO(verified.output);
  CHECK(verified.code == 0);
  const Replayed original = replay_executed(in, dir / "in.json");
  const Replayed fixed = replay_executed(out, dir / "out.json");
  CHECK(fixed.code == 0);
  if (original.code == 0) CHECK(fixed.executed == original.executed);
  // The repaired trace says so itself: `info` shows the summary's marker, with the events kept
  // (those the output holds) and, after them, the parts dropped.
  if (repaired.output.find("nothing to repair") == std::string::npos) {
    auto reader = vs::TraceReader::open(out);
    REQUIRE(reader.has_value());
    auto info = run_vtrace(fmt::format("info {}", out.string()));
    INFO(info.output);
    CHECK(info.output.find(fmt::format("\nrepaired:    vtrace repair kept events 0 to {}",
                                       (*reader)->event_count() - 1)) != std::string::npos);
    if (repaired.output.find("  dropped ") != std::string::npos) {
      CHECK(info.output.find("; dropped ") != std::string::npos);
    }
  }
  return repaired.output;
}

// The trace re-written in frames of about 4 KiB, so that damage can hit one frame in the middle.
void write_in_small_frames(const fs::path& source, const fs::path& destination) {
  auto reader = vs::TraceReader::open(source);
  REQUIRE(reader.has_value());
  auto& r = **reader;
  auto sink = vs::open_file_sink(destination);
  REQUIRE(sink.has_value());
  vs::TraceWriterOptions options;
  options.frame_target_bytes = 4096;
  auto writer = vs::TraceWriter::create(std::move(*sink), r.header(), options);
  REQUIRE(writer.has_value());
  REQUIRE(r.visit_events(0, r.event_count(), [&](std::uint64_t, std::span<const std::uint8_t> e) {
             for (const auto& id : vs::event_links(*vs::event_of(e)).payloads) {
               auto blob = r.blob(id);
               REQUIRE(blob.has_value());
               REQUIRE((*writer)->put_blob(*blob, 2).has_value());
             }
             REQUIRE((*writer)->append_event(e).has_value());
             return true;
           }).has_value());
  REQUIRE((*writer)->close(r.summary()).has_value());
}

std::vector<vs::FrameInfo> frames_of(const fs::path& trace) {
  auto reader = vs::TraceReader::open(trace);
  REQUIRE(reader.has_value());
  return (*reader)->frames();
}

}  // namespace

TEST_CASE(
    "vtrace record interrupted by a write failure says how to repair the .partial, and that "
    "command finishes it",
    "[cli][repair]") {
  ScratchDir dir("cli-repair-partial");
  const fs::path out = dir / "contract.vtrace";
  // The contract workload with 400 extra rounds writes about 46 KiB of trace and no other file. A
  // file size limit of 30 blocks (15 or 30 KiB, as the shell counts blocks) makes the writer's
  // write fail with EFBIG part-way (vtrace ignores SIGXFSZ itself), exactly as a full disk would.
  auto record =
      run_shell(fmt::format("ulimit -f 30 && {} record -w contract --steps 400 -o {}",
                            VTRACE_CLI_PATH, out.string()));
  INFO(record.output);
  REQUIRE(record.code == 2);
  const std::string partial = out.string() + ".partial";
  REQUIRE(fs::exists(partial));
  CHECK_FALSE(fs::exists(out));
  const std::string command = fmt::format("vtrace repair {} -o {}", partial, out.string());
  CHECK(record.output.find(fmt::format("the events recorded so far are in {} (`{}` finishes it)",
                                       partial, command)) != std::string::npos);
  auto reader = vs::TraceReader::open(partial);
  REQUIRE(reader.has_value());
  REQUIRE_FALSE((*reader)->complete());
  REQUIRE((*reader)->event_count() > 0);
  const std::string said = check_repair(partial, out, dir);
  CHECK(said.find(fmt::format("repaired {} into {}: kept ", partial, out.string())) !=
        std::string::npos);
  CHECK(read_bytes(partial).size() > 0);  // the input is left as it was
}

TEST_CASE("vtrace record whose first write fails says that no file is left, and leaves none",
          "[cli][repair]") {
  ScratchDir dir("cli-record-nothing");
  const fs::path out = dir / "contract.vtrace";
  // A file size limit of 0: the .partial opens and the header's write fails with EFBIG.
  auto record = run_shell(fmt::format("ulimit -f 0 && {} record -w contract -o {}",
                                      VTRACE_CLI_PATH, out.string()));
  INFO(record.output);
  CHECK(record.code == 2);
  CHECK(record.output == fmt::format("vtrace: writing the trace failed: cannot write {}.partial: "
                                     "File too large; nothing had reached the file, and none is "
                                     "left\n",
                                     out.string()));
  CHECK_FALSE(fs::exists(out));
  CHECK_FALSE(fs::exists(out.string() + ".partial"));
}

TEST_CASE(
    "vtrace repair of a recording cut at many offsets verifies and replays as far as the cut one",
    "[cli][repair]") {
  ScratchDir dir("cli-repair-cuts");
  vtrace::test::record_workload(vtrace::test::small_decode_spec(), dir / "full.vtrace");
  write_in_small_frames(dir / "full.vtrace", dir / "small.vtrace");
  const Bytes full = read_bytes(dir / "small.vtrace");
  const std::uint64_t header_end = 8 + vs::testing::read_u32(full, 4);
  int repaired = 0;
  for (int i = 1; i <= 12; ++i) {
    const std::uint64_t cut =
        header_end + (full.size() - header_end) * static_cast<std::uint64_t>(i) / 13;
    INFO("cut at " << cut << " of " << full.size());
    write_bytes(dir / "cut.vtrace",
                Bytes(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut)));
    auto run = run_vtrace(fmt::format("repair {} -o {}", (dir / "cut.vtrace").string(),
                                      (dir / "fixed.vtrace").string()));
    if (run.code == 1) {  // nothing recoverable before the first flush of the first frame
      CHECK(run.output.find("nothing is recoverable") != std::string::npos);
      CHECK_FALSE(fs::exists(dir / "fixed.vtrace"));
      continue;
    }
    check_repair(dir / "cut.vtrace", dir / "fixed.vtrace", dir);
    fs::remove(dir / "fixed.vtrace");
    ++repaired;
  }
  CHECK(repaired >= 10);
}

TEST_CASE("vtrace repair of a damaged middle frame names it and what was lost", "[cli][repair]") {
  ScratchDir dir("cli-repair-damaged");
  vtrace::test::record_workload(vtrace::test::small_decode_spec(), dir / "full.vtrace");
  write_in_small_frames(dir / "full.vtrace", dir / "small.vtrace");
  const auto frames = frames_of(dir / "small.vtrace");
  REQUIRE(frames.size() >= 4);
  Bytes bytes = read_bytes(dir / "small.vtrace");
  bytes[frames[2].file_offset + frames[2].compressed_bytes / 2] ^= 0x20;
  write_bytes(dir / "damaged.vtrace", bytes);
  CHECK(run_vtrace(fmt::format("verify {}", (dir / "damaged.vtrace").string())).code == 1);

  const auto json = dir / "repair.json";
  auto run = run_vtrace(fmt::format("repair {} -o {} --json {}", (dir / "damaged.vtrace").string(),
                                    (dir / "fixed.vtrace").string(), json.string()));
  INFO(run.output);
  REQUIRE(run.code == 0);
  CHECK(run.output.find(fmt::format(
            "dropped damaged frame 2 at offset {} ({} bytes): {} events lost "
            "(events {} to {})",
            frames[2].file_offset, frames[2].compressed_bytes, frames[2].event_count,
            frames[2].first_event, frames[2].first_event + frames[2].event_count - 1)) !=
        std::string::npos);
  CHECK(run.output.find(fmt::format("dropped later frames 3 at offset {}",
                                    frames[3].file_offset)) != std::string::npos);
  CHECK(run_vtrace(fmt::format("verify {}", (dir / "fixed.vtrace").string())).code == 0);
  const Replayed fixed = replay_executed(dir / "fixed.vtrace", dir / "out.json");
  CHECK(fixed.code == 0);
  CHECK(fixed.executed == frames[2].first_event);
  std::ifstream in(json);
  const auto report = nlohmann::json::parse(in);
  CHECK(report["nothing_to_repair"] == false);
  CHECK(report["events_kept"] == frames[2].first_event);
  REQUIRE(report["drops"].size() == 2);
  CHECK(report["drops"][0]["part"] == "damaged frame");
  CHECK(report["drops"][0]["frame"] == 2);
  CHECK(report["drops"][0]["offset"] == frames[2].file_offset);
  CHECK(report["drops"][0]["events_lost"] == frames[2].event_count);
  for (const char* key : {"trace", "output", "payloads_kept", "events_in_input", "input_bytes",
                          "output_bytes", "input_state"}) {
    CHECK(report.contains(key));
  }
}

TEST_CASE("vtrace repair of a damaged footer keeps every event, and of an intact trace copies it",
          "[cli][repair]") {
  ScratchDir dir("cli-repair-footer");
  vtrace::test::record_workload(vtrace::test::small_decode_spec(), dir / "full.vtrace");
  const Bytes full = read_bytes(dir / "full.vtrace");
  Bytes bytes = full;
  const std::uint64_t foff = vs::testing::footer_offset(full);
  bytes[foff + 24] ^= 0x02;
  write_bytes(dir / "footer.vtrace", bytes);
  const std::string said = check_repair(dir / "footer.vtrace", dir / "fixed.vtrace", dir);
  CHECK(said.find(fmt::format("dropped footer at offset {} ({} bytes): events lost", foff,
                              full.size() - foff)) != std::string::npos);
  CHECK(replay_executed(dir / "fixed.vtrace", dir / "r.json").executed ==
        vs::TraceReader::open(dir / "full.vtrace").value()->event_count());

  // A larger .repairing left by a repair that died is truncated, not written over in place (its
  // tail would follow the copy).
  write_bytes(dir / "copy.vtrace.repairing", Bytes(full.size() * 3, 0xA5));
  auto intact = run_vtrace(fmt::format("repair {} -o {} --json {}", (dir / "full.vtrace").string(),
                                       (dir / "copy.vtrace").string(),
                                       (dir / "copy.json").string()));
  INFO(intact.output);
  CHECK(intact.code == 0);
  CHECK(intact.output.find("nothing to repair (it verifies)") != std::string::npos);
  {
    std::ifstream in(dir / "copy.json");
    const auto copied = nlohmann::json::parse(in);
    CHECK(copied["nothing_to_repair"] == true);
    CHECK_THAT(copied["input_state"].get<std::string>(),
               Catch::Contains("complete:") &&
                   Catch::Contains("every checksum and index verified"));
  }
  CHECK(read_bytes(dir / "copy.vtrace") == full);
  CHECK_FALSE(fs::exists(dir / "copy.vtrace.repairing"));

  // A symbolic link at the .repairing name is refused: what it points to stays as it was.
  write_bytes(dir / "precious", Bytes{1, 2, 3});
  fs::create_symlink(dir / "precious", dir / "linked.vtrace.repairing");
  auto linked = run_vtrace(fmt::format("repair {} -o {}", (dir / "footer.vtrace").string(),
                                       (dir / "linked.vtrace").string()));
  INFO(linked.output);
  CHECK(linked.code == 2);
  CHECK(linked.output.find("linked.vtrace.repairing: it exists and is a symbolic link") !=
        std::string::npos);
  CHECK(read_bytes(dir / "precious") == Bytes{1, 2, 3});
  CHECK_FALSE(fs::exists(dir / "linked.vtrace"));
}

TEST_CASE(
    "vtrace repair refuses bad outputs and unreadable inputs, and writes nothing when nothing is "
    "recoverable",
    "[cli][repair]") {
  ScratchDir dir("cli-repair-refusals");
  const std::string tiny = vtrace::test::golden("tiny-v1.2");
  auto same = run_vtrace(fmt::format("repair {} -o {}", tiny, tiny));
  CHECK(same.code == 2);
  CHECK(same.output.find("is the same file as the trace") != std::string::npos);
  auto directory = run_vtrace(fmt::format("repair {} -o {}", tiny, (dir / "").string()));
  CHECK(directory.code == 2);
  // The temporary file is named as what it is: -o's, written first.
  auto temporary = run_vtrace(fmt::format("repair {} -o {} --json {}", tiny,
                                          (dir / "r.vtrace").string(),
                                          (dir / "r.vtrace.repairing").string()));
  INFO(temporary.output);
  CHECK(temporary.code == 2);
  CHECK_THAT(temporary.output,
             Catch::Contains(fmt::format("is the same file as -o {0} (written as {0}.repairing "
                                         "first): choose another path for the JSON report",
                                         (dir / "r.vtrace").string())));
  CHECK_FALSE(fs::exists(dir / "r.vtrace"));
  CHECK(run_vtrace(fmt::format("repair {} -o {}", (dir / "missing.vtrace").string(),
                               (dir / "x.vtrace").string()))
            .code == 2);
  write_bytes(dir / "text.vtrace",
              Bytes{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'});
  CHECK(run_vtrace(fmt::format("repair {} -o {}", (dir / "text.vtrace").string(),
                               (dir / "x.vtrace").string()))
            .code == 2);
  Bytes header_damaged = read_bytes(tiny);
  header_damaged[24] ^= 0x01;
  write_bytes(dir / "header.vtrace", header_damaged);
  auto header = run_vtrace(fmt::format("repair {} -o {}", (dir / "header.vtrace").string(),
                                       (dir / "x.vtrace").string()));
  INFO(header.output);
  CHECK(header.code == 1);
  CHECK(header.output.find("(nothing was written)") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "x.vtrace"));
  CHECK_FALSE(fs::exists(dir / "x.vtrace.repairing"));
}

TEST_CASE(
    "a payload changed behind valid frame checksums is refused by verify and replay naming the "
    "payload",
    "[cli][integrity]") {
  ScratchDir dir("cli-payload-tamper");
  vtrace::test::record_workload(vtrace::test::small_decode_spec(), dir / "full.vtrace");
  const Bytes full = read_bytes(dir / "full.vtrace");
  std::string id_hex;
  const Bytes changed = vs::testing::with_frame_content_changed(full, 0, [&](Bytes& content) {
    // The last blob record of the frame (a readback's or an upload's payload): one byte changed.
    std::size_t at = 0, last = content.size();
    while (at + 5 <= content.size()) {
      const std::uint32_t len = vs::testing::read_u32(content, at);
      if (content[at + 4] == 2 && len > vs::kBlobRecordHeaderBytes) last = at;
      at += 5 + len;
    }
    REQUIRE(last < content.size());
    std::uint64_t low = 0, high = 0;
    std::memcpy(&low, content.data() + last + 5, 8);
    std::memcpy(&high, content.data() + last + 13, 8);
    id_hex = vs::BlobId{low, high}.hex();
    content[last + 5 + vs::kBlobRecordHeaderBytes] ^= 0x01;
  });
  const std::string sentence = fmt::format("payload {} decodes to bytes whose XXH3-128 is", id_hex);
  SECTION("with the footer rebuilt to match the changed frame") {
    write_bytes(dir / "t.vtrace", changed);
  }
  SECTION("without a footer (read as a recovered recording)") {
    write_bytes(dir / "t.vtrace",
                Bytes(changed.begin(), changed.begin() + static_cast<std::ptrdiff_t>(
                                                             vs::testing::footer_offset(changed))));
  }
  auto verify = run_vtrace(fmt::format("verify {}", (dir / "t.vtrace").string()));
  INFO(verify.output);
  CHECK(verify.code == 1);
  CHECK(verify.output.find(sentence) != std::string::npos);
  auto replay = run_vtrace(fmt::format("replay {}", (dir / "t.vtrace").string()));
  INFO(replay.output);
  CHECK(replay.code == 2);
  CHECK(replay.output.find(sentence) != std::string::npos);
}
