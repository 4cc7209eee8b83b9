// Two recorded traces aligned event by event (lockstep.h, diff_traces).
#include <fmt/format.h>

#include "vtrace/drift/lockstep.h"
#include "vtrace/replayer/comparator.h"
#include "vtrace/replayer/step_text.h"

namespace vtrace::drift {

namespace rp = vtrace::replayer;

std::expected<CompareReport, rp::ReplayFailure> diff_traces(const std::filesystem::path& a,
                                                            const std::filesystem::path& b,
                                                            const DriftCheck& check,
                                                            const std::string& label_a,
                                                            const std::string& label_b) {
  auto plan_a = rp::open_plan(a);
  if (!plan_a) return std::unexpected(plan_a.error());
  auto plan_b = rp::open_plan(b);
  if (!plan_b) return std::unexpected(plan_b.error());
  CompareReport report;
  report.trace = fmt::format("{} vs {}", a.string(), b.string());
  report.runtimes = {label_a, label_b};
  report.check = check.to_string();
  report.recovered = {recovered_trace(a, *plan_a), recovered_trace(b, *plan_b)};
  const auto& sa = plan_a->steps();
  const auto& sb = plan_b->steps();
  // A structural difference at `event` (of kind `event_kind` in `a`): `what` is the difference's
  // kind ("event_kind", "call", "outcome", ...).
  auto structural = [&](std::uint64_t event, const std::string& event_kind, std::string call,
                        std::string what, std::string expected, std::string actual) {
    if (!report.first_divergence) {
      report.first_divergence =
          FirstDivergence{event,   std::nullopt, std::nullopt,           event_kind,
                          call,    label_b,      DriftClass::kStructural};
    }
    report.structural.push_back({report.structural.size(), event, std::move(call), label_b,
                                 label_a, std::move(what), std::move(expected),
                                 std::move(actual)});
  };
  const std::size_t common = std::min(sa.size(), sb.size());
  for (std::size_t i = 0; i < common; ++i) {
    ++report.events;
    const auto& x = sa[i];
    const auto& y = sb[i];
    // Steps, not kind names: a 1.1 OptionalCall and the 1.2 kind of its method are the same call.
    if (x.body.index() != y.body.index()) {
      structural(i, x.kind, rp::describe_step(x), "event_kind", x.kind, y.kind);
      continue;
    }
    // The same call with other arguments (what the step text names: ids, sizes, regions, ...).
    if (const auto cx = rp::describe_step(x), cy = rp::describe_step(y); cx != cy) {
      structural(i, x.kind, cx, "call", cx, cy);
    }
    const auto ox = rp::recorded_observation(x, *plan_a);
    const auto oy = rp::recorded_observation(y, *plan_b);
    for (const auto& d : rp::compare(ox, oy, rp::CheckMode::none()).differences) {
      const auto text = rp::render(d, ox, oy);
      structural(i, x.kind, rp::describe_step(x), std::string(rp::difference_kind_name(d.kind)),
                 text.expected, text.actual);
    }
    const auto* rx = std::get_if<rp::step::Readback>(&x.body);
    if (rx == nullptr || !ox.readback || !oy.readback) continue;
    CommandComparison c;
    c.order = report.commands.size();  // its index in `commands`
    c.event = i;
    c.kind = x.kind;
    c.call = rp::describe_step(x);
    c.shapes = fmt::format("{} x {}", runtime::element_type_name(rx->layout.element_type()),
                           rx->layout.element_count());
    const auto n = compare_values(ox.readback->bytes(), oy.readback->bytes(),
                                  rx->layout.element_type(), check);
    c.results.push_back({label_b, n.cls, n.agrees, n.stats, {}});
    c.worst = n.cls;
    c.agrees = n.agrees;
    if (!c.agrees && !report.first_divergence) {
      report.first_divergence =
          FirstDivergence{c.event, std::nullopt, c.order, c.kind, c.call, label_b, n.cls};
    }
    report.commands.push_back(std::move(c));
  }
  if (sa.size() != sb.size()) {
    const bool a_longer = sa.size() > sb.size();
    const auto& longer = a_longer ? sa : sb;
    structural(common, longer[common].kind, rp::describe_step(longer[common]), "missing_events",
               fmt::format("{} events", sa.size()), fmt::format("{} events", sb.size()));
  }
  return report;
}

}  // namespace vtrace::drift
