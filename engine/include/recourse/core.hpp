// recourse's core for hosts that embed the engine: compile policies into a Bundle, read what a
// failed call returned (the envelope, or a protocol's failure through an adapter), say what the
// host knows (the Context), decide (Policy, Bundle, Engine) and log. Everything here returns a
// Result or never fails; decide() never throws and allocates nothing.
//
// Cross-call state (Workflow, Health, the stores) is in state.hpp and store.hpp; authoring tools
// (explain, tests, diff, format, samples) in tooling.hpp; recourse.hpp includes them all.
#pragma once

#include "recourse/adapters.hpp"
#include "recourse/diagnostic.hpp"
#include "recourse/engine.hpp"
#include "recourse/envelope.hpp"
#include "recourse/policy.hpp"
#include "recourse/result.hpp"
