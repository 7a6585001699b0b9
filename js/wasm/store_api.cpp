// The WebAssembly module's own entry points for the npm package's stores (js/src/store.js,
// js/src/redis.js; docs/javascript.md, "State"), beside the C API it exports: a memory store with
// its limits, the staged store (staged.hpp) with its load and journal, one store operation
// applied from JSON (ops.hpp), and the Redis store's scripts. Not part of recourse.h: no other
// host needs them. Each catches every exception; strings out are freed with recourse_string_free.
#include <emscripten/emscripten.h>

#include <memory>

#include "api/handles.hpp"
#include "ops.hpp"
#include "recourse/recourse.h"
#include "staged.hpp"
#include "store/redis_scripts.hpp"

namespace {

using recourse::js::json;

using recourse::capi::copy;
using recourse::capi::set;

// Runs `body` with the JSON text `text`, `len` bytes: its status, the reason of a failure in
// `error` (BAD_INPUT for JSON or an argument that does not read).
template <typename Body>
recourse_status with_json(const char* text, std::size_t len, char** error, Body body) {
  if (error) *error = nullptr;
  try {
    if (!text) return set(error, "the JSON text is NULL"), RECOURSE_INVALID_ARGUMENT;
    return body(json::parse(text, text + len));
  } catch (const std::bad_alloc&) {
    return RECOURSE_NO_MEMORY;
  } catch (const std::exception& e) {
    set(error, e.what());
    return RECOURSE_BAD_INPUT;
  } catch (...) {
    return RECOURSE_INTERNAL;
  }
}

recourse::js::StagedStore* staged(recourse_store* store) {
  return store ? dynamic_cast<recourse::js::StagedStore*>(store->store.get()) : nullptr;
}

}  // namespace

extern "C" {

/// A memory store (recourse::MemoryStore) whose tool and operation records expire state_ttl_ms
/// after their last change and ledger entries ledger_ttl_ms after (StoreOptions; ms, > 0), or
/// NULL for a limit below 1 or without memory. Free with recourse_store_free.
EMSCRIPTEN_KEEPALIVE recourse_store* recourse_js_memory_store(std::int64_t state_ttl_ms,
                                                              std::int64_t ledger_ttl_ms) {
  if (state_ttl_ms < 1 || ledger_ttl_ms < 1) return nullptr;
  try {
    recourse::StoreOptions options;
    options.state_ttl_ms = state_ttl_ms;
    options.ledger_ttl_ms = ledger_ttl_ms;
    return new recourse_store{std::make_shared<recourse::MemoryStore>(options)};
  } catch (...) {
    return nullptr;
  }
}

/// A staged store (staged.hpp), empty, or NULL without memory. Free with recourse_store_free.
EMSCRIPTEN_KEEPALIVE recourse_store* recourse_js_staged_store(void) {
  try {
    return new recourse_store{std::make_shared<recourse::js::StagedStore>()};
  } catch (...) {
    return nullptr;
  }
}

/// Applies one operation (ops.hpp's JSON, `len` bytes) to `store`; on RECOURSE_OK `answer`
/// receives its answer's JSON ("null": the store could not answer). An operation that does not
/// read is RECOURSE_BAD_INPUT with the reason in `error`.
EMSCRIPTEN_KEEPALIVE recourse_status recourse_js_store_apply(recourse_store* store, const char* op,
                                                             std::size_t len, char** answer,
                                                             char** error) {
  if (!store || !answer) return set(error, "store or answer is NULL"), RECOURSE_INVALID_ARGUMENT;
  *answer = nullptr;
  return with_json(op, len, error, [&](const json& j) {
    *answer = copy(recourse::js::apply(*store->store, j).dump());
    return *answer ? RECOURSE_OK : RECOURSE_NO_MEMORY;
  });
}

/// StagedStore::load on a staged store's handle (RECOURSE_INVALID_ARGUMENT for another store);
/// records that do not read are RECOURSE_BAD_INPUT, the copy then unchanged.
EMSCRIPTEN_KEEPALIVE recourse_status recourse_js_staged_load(recourse_store* store,
                                                             const char* records, std::size_t len,
                                                             char** error) {
  recourse::js::StagedStore* s = staged(store);
  if (!s) return set(error, "not a staged store"), RECOURSE_INVALID_ARGUMENT;
  return with_json(records, len, error, [&](const json& j) {
    s->load(j);
    return RECOURSE_OK;
  });
}

/// StagedStore::take as JSON, or NULL for another store or without memory.
EMSCRIPTEN_KEEPALIVE char* recourse_js_staged_take(recourse_store* store) {
  recourse::js::StagedStore* s = staged(store);
  try {
    return s ? copy(s->take().dump()) : nullptr;
  } catch (...) {
    return nullptr;
  }
}

/// The Redis store's scripts (store/redis_scripts.hpp), in its order: [{"name", "source"}], or
/// NULL without memory.
EMSCRIPTEN_KEEPALIVE char* recourse_js_redis_scripts(void) {
  try {
    json out = json::array();
    for (int i = 0; i < recourse::detail::kRedisScripts; ++i)
      out.push_back({{"name", recourse::detail::redis_script_name(i)},
                     {"source", recourse::detail::redis_script_source(i)}});
    return copy(out.dump());
  } catch (...) {
    return nullptr;
  }
}

}  // extern "C"
