// recourse: an embeddable policy engine that decides how to recover when a tool call fails.
// Include this header for the whole C++ API: the core (core.hpp: compile, decide, adapters,
// Engine), cross-call state (state.hpp, store.hpp), the recovery loop (runner.hpp) and the
// authoring tools (tooling.hpp).
#pragma once

#include "recourse/core.hpp"
#include "recourse/runner.hpp"
#include "recourse/state.hpp"
#include "recourse/store.hpp"
#include "recourse/tooling.hpp"
