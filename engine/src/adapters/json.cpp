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
  explicit DomBuilder(std::size_t max_depth) : max_depth_(max_depth) {}

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
  SaxErrors errors_;

 private:
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
  if (text.size() > max_bytes) {
    out.error = "input is " + std::to_string(text.size()) + " bytes; the limit is " +
                std::to_string(max_bytes);
    return out;
  }
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    out.error = "invalid JSON at byte " + std::to_string(nul + 1) + ": a NUL byte";
    return out;
  }
  std::string patched;
  std::string_view input = text;
  for (std::size_t pass = 0;; ++pass) {
    DomBuilder builder(limits.max_depth);
    const bool ok = json::sax_parse(input.begin(), input.end(), &builder);
    if (ok && builder.errors_.error.empty()) {
      out.ok = true;
      out.value = std::move(builder.root_);
      return out;
    }
    if (builder.errors_.overflow_end == 0 || !builder.errors_.error.empty()) {
      out.error = builder.errors_.error.empty() ? "invalid JSON" : builder.errors_.error;
      return out;
    }
    if (pass == limits.max_overflow_numbers) {
      out.error = "more than " + std::to_string(limits.max_overflow_numbers) +
                  " numbers beyond the range of a double";
      return out;
    }
    if (patched.empty()) patched = std::string(text);
    builder.errors_.patch(patched);
    input = patched;
  }
}

bool is_marker(const json& v) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  return !s.empty() && s[0] == '\x01' && (s == kDuplicate || s == kTooDeep || s == kOverflow);
}

const std::string* str(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string() || is_marker(*it)) return nullptr;
  return &it->get_ref<const std::string&>();
}

}  // namespace recourse::detail::adapt
