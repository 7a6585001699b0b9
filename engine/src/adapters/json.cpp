// Adapters, hardened JSON; see json.hpp.
#include "adapters/json.hpp"

#include <vector>

#include "envelope/json_number.hpp"

namespace recourse::detail::adapt {
namespace {

// A SAX consumer that builds a DOM, with markers for duplicates, depth and overflow (see
// json.hpp).
class DomBuilder : public nlohmann::json_sax<json> {
 public:
  DomBuilder(std::size_t max_depth, SaxErrors& errors) : errors_(errors), max_depth_(max_depth) {}

  bool null() override { return put(json()); }
  bool boolean(bool v) override { return put(json(v)); }
  bool number_integer(number_integer_t v) override { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
  bool number_float(number_float_t v, const string_t& token) override {
    return put(json(detail::written_double(v, token)));
  }
  bool string(string_t& v) override { return put(json(std::move(v))); }
  bool binary(binary_t&) override { return put(json()); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (skip_ == 0) {
      duplicate_ = stack_.back()->contains(k);
      key_ = std::move(k);
    }
    return true;
  }
  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& e) override {
    return errors_.record(position, token, e);
  }

  json root_;

 private:
  SaxErrors& errors_;
  json* insert(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    json& slot = top[key_];
    if (duplicate_) {
      slot = std::string(kDuplicate);
      duplicate_ = false;
      return nullptr;
    }
    slot = std::move(v);
    return &slot;
  }
  bool put(json&& v) {
    if (skip_ == 0) insert(std::move(v));
    return true;
  }
  bool open(json&& container) {
    if (skip_ > 0) {
      ++skip_;
      return true;
    }
    if (stack_.size() >= max_depth_) {
      insert(std::string(kTooDeep));
      skip_ = 1;
      return true;
    }
    json* slot = insert(std::move(container));
    if (slot == nullptr) {
      skip_ = 1;  // the second value of a duplicated key: skipped
      return true;
    }
    stack_.push_back(slot);
    return true;
  }
  bool close() {
    if (skip_ > 0)
      --skip_;
    else
      stack_.pop_back();
    return true;
  }

  std::size_t max_depth_;
  std::vector<json*> stack_;
  std::string key_;
  bool duplicate_ = false;
  std::size_t skip_ = 0;
};

}  // namespace

Parsed parse_json(std::string_view text, std::size_t max_bytes, const ReaderLimits& limits) {
  Parsed out;
  out.error = sax_read(text, "input", max_bytes, limits.max_overflow_numbers,
                       [&](std::string_view input, SaxErrors& errors) {
                         DomBuilder builder(limits.max_depth, errors);
                         const bool ok = json::sax_parse(input.begin(), input.end(), &builder);
                         out.value = std::move(builder.root_);
                         return ok;
                       });
  out.ok = out.error.empty();
  if (!out.ok) out.value = json();
  return out;
}

bool is_marker(const json& v) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  return !s.empty() && s[0] == '\x01' && (s == kDuplicate || s == kTooDeep || s == kOverflowMarker);
}

const std::string* str(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string() || is_marker(*it)) return nullptr;
  return &it->get_ref<const std::string&>();
}

}  // namespace recourse::detail::adapt
