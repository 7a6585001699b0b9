// The envelope's JSON writer, recourse::to_json(Envelope): the fields set, under the keys the
// envelope reader (envelope/envelope.cpp) reads, in model/fields.hpp's order.
#include <nlohmann/json.hpp>

#include "model/fields.hpp"

namespace recourse {

std::string to_json(const Envelope& e) {
  using json = nlohmann::ordered_json;
  json j = json::object();
  detail::for_each_envelope_field([&](const detail::Field& f, auto field) {
    if (const auto& value = e.*field) j[std::string(f.key)] = *value;
  });
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace recourse
