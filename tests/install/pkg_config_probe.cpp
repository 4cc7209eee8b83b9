// Built by install_test.sh with nothing but `pkg-config --cflags --libs vtrace` against the staged
// prefix, and run: it uses all six libraries, so a missing library, a wrong link order or a
// missing dependency in vtrace.pc fails the link, and a missing header fails the compile.
//   runtime   immediate operations on the reference runtime
//   recorder  RecordingRuntime around it, writing TRACE (schema: the writer)
//   replayer  replay_trace of TRACE on reference: no mismatch
//   drift     compare_trace of TRACE on reference and cpu in lockstep: a match
//   report    its HTML page written to memory
// Usage: pkg_config_probe TRACE. Exit 0 when all of it held, 1 otherwise (one sentence why).
#include <cstdio>
#include <sstream>
#include <string>
#include <utility>

#include "vtrace/drift/lockstep.h"
#include "vtrace/recorder/recording_runtime.h"
#include "vtrace/replayer/replay_trace.h"
#include "vtrace/report/html_report.h"
#include "vtrace/runtime/f16.h"
#include "vtrace/runtime/immediate.h"
#include "vtrace/runtime/registry.h"

namespace vr = vtrace::runtime;

namespace {

int fail(const std::string& what, const std::string& why) {
  std::fprintf(stderr, "pkg_config_probe: %s: %s\n", what.c_str(), why.c_str());
  return 1;
}

// out[1][2] = in[1][2] x w[2][2]^T, the spec's 2x2 example: [1.5, -2] -> [1, -7.5].
vr::Result<std::vector<float>> tiny_linear(vr::DeviceRuntime& runtime) {
  namespace immediate = vr::immediate;
  auto stream = runtime.create_stream();
  if (!stream) return std::unexpected(stream.error());
  auto weight = immediate::allocate_buffer(runtime, "weight.probe", vr::ElementType::kF16, 4,
                                           vr::BufferUsage::kWeights);
  auto input = immediate::allocate_buffer(runtime, "resource.probe.in", vr::ElementType::kF16, 2,
                                          vr::BufferUsage::kActivations);
  auto output = immediate::allocate_buffer(runtime, "resource.probe.out", vr::ElementType::kF16, 2,
                                           vr::BufferUsage::kActivations);
  if (!weight || !input || !output) {
    return std::unexpected(!weight ? weight.error() : !input ? input.error() : output.error());
  }
  const float w[] = {2.0f, 1.0f, -1.0f, 3.0f};
  const float x[] = {1.5f, -2.0f};
  if (auto up = immediate::upload(runtime, **stream, **weight, vr::to_f16_bytes(w)); !up) {
    return std::unexpected(up.error());
  }
  if (auto up = immediate::upload(runtime, **stream, **input, vr::to_f16_bytes(x)); !up) {
    return std::unexpected(up.error());
  }
  if (auto ran = immediate::dense_linear(runtime, **stream, **input, **weight, **output, {1, 2, 2});
      !ran) {
    return std::unexpected(ran.error());
  }
  auto bytes = immediate::readback(runtime, **stream, **output);
  if (!bytes) return std::unexpected(bytes.error());
  return vr::from_f16_bytes(*bytes);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return fail("usage", "pkg_config_probe TRACE");
  const std::string trace = argv[1];
  const auto& registry = vr::default_registry();

  auto inner = registry.open("reference");
  if (!inner) return fail("open reference", inner.error().message());
  auto recorder = vtrace::recorder::RecordingRuntime::create(std::move(*inner), "reference", trace);
  if (!recorder) return fail("RecordingRuntime::create", recorder.error().message());
  auto values = tiny_linear(**recorder);
  if (!values) return fail("tiny_linear", values.error().message());
  if (values->size() != 2 || (*values)[0] != 1.0f || (*values)[1] != -7.5f) {
    return fail("tiny_linear", "the output is not [1, -7.5]");
  }
  if (auto closed = (*recorder)->close(); !closed) {
    return fail("close", "the trace was not written");
  }

  auto replayed = vtrace::replayer::replay_trace(trace, {}, registry);
  if (!replayed) return fail("replay_trace", replayed.error().message);
  if (replayed->mismatch_count != 0) return fail("replay_trace", "mismatches on reference");

  vtrace::drift::CompareOptions options;
  options.runtimes = {"reference", "cpu"};
  auto compared = vtrace::drift::compare_trace(trace, options, registry);
  if (!compared) return fail("compare_trace", compared.error().message);
  if (!compared->matched()) return fail("compare_trace", "verdict " + compared->verdict());
  std::ostringstream page;
  if (!vtrace::report::write_html_report(*compared, page, {}) ||
      page.str().find("id=\"error-chart\"") == std::string::npos) {
    return fail("write_html_report", "no page");
  }

  std::printf("pkg_config_probe: recorded, replayed on reference and compared with cpu: match\n");
  return 0;
}
