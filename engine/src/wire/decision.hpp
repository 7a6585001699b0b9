// The decision's warnings as its JSON lists them (decision.cpp), for a binding that builds the
// decision's objects without the JSON text (python/).
#pragma once

#include <vector>

#include "recourse/policy.hpp"

namespace recourse::detail {

/// The decision's "warnings": the envelope reader's (Envelope::warnings), then one per
/// DecisionWarning bit set, in kDecisionWarningKinds' order, each {kind, field, message}.
std::vector<EnvelopeWarning> decision_warnings(const Decision& decision, const Envelope& envelope);

}  // namespace recourse::detail
