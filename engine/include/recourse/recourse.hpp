// recourse: an embeddable policy engine that decides how to recover when a tool call fails.
// Include this header for the whole C++ API.
#pragma once

#include "recourse/adapters.hpp"
#include "recourse/diagnostic.hpp"
#include "recourse/engine.hpp"
#include "recourse/envelope.hpp"
#include "recourse/format.hpp"
#include "recourse/policy.hpp"
#include "recourse/state.hpp"
