// What the C API (c_api.cpp) shares with the WebAssembly module's own entry points
// (js/wasm/store_api.cpp), which make store handles over stores of their own: the store handle
// (recourse_store, recourse.h) and the strings handed out.
#pragma once

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "recourse/store.hpp"

/// A store shared by the handles made with it (recourse_health, recourse_workflow,
/// recourse_runner), each of which keeps it alive.
struct recourse_store {
  std::shared_ptr<recourse::Store> store;
};

namespace recourse::capi {

/// A malloc'd NUL-terminated copy of `s` for the caller to free (recourse_string_free), or
/// nullptr without memory.
inline char* copy(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

/// Sets `*out` (when `out` is not NULL) to a copy of `s`.
inline void set(char** out, const std::string& s) {
  if (out) *out = copy(s);
}

}  // namespace recourse::capi
