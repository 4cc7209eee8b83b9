#include "vtrace/replayer/json_text.h"

namespace vtrace::replayer {

std::string json_text(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace vtrace::replayer
