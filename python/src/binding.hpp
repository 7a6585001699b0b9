// The extension module's shared pieces (python/src/): Python objects to the engine's inputs
// (inputs.cpp), the engine's outputs to the package's dataclasses (outputs.cpp), and the
// package's Python types the module builds and raises (types registered by recourse/__init__.py).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "recourse/adapters.hpp"
#include "recourse/engine.hpp"
#include "recourse/envelope.hpp"
#include "recourse/policy.hpp"
#include "recourse/runner.hpp"

namespace recourse::python {

namespace py = pybind11;

/// The engine behind recourse.Bundle. Decisions are copied into Python objects on the deciding
/// thread right after decide(), so none holds a pin on the bundle.
struct PyEngine {
  explicit PyEngine(bool count) : engine(Bundle{}, EngineOptions{count}) {}
  Engine engine;
};

/// The package's Python classes the module builds instances of, registered once by
/// recourse/__init__.py (_recourse._register) before any other call.
struct Types {
  py::object decision, budget, budgets, warning, diagnostic, action, adapted;
  py::object route, key_directive, step, ending, circuit;  // enums, indexed by value
  py::object error, compile_error, context_error, input_error, store_error, runner_error;
};
/// The registered types (valid after _register).
Types& types();

/// json.loads(text): a JSON text the engine wrote, as Python values.
py::object json_loads(const std::string& text);

/// An envelope from a dict (its members read by read_envelope()'s rules, as the JSON of the
/// same dict would be: envelope/members.hpp), JSON text (str or bytes), an Adapted (its
/// envelope as the adapter read it), or None (an empty envelope). nullopt: text that is not a
/// JSON object, or a value of another type (decided as unreadable_envelope).
std::optional<Envelope> to_envelope(py::handle value);
/// A context from a dict (read_context()'s rules: wire/context.hpp), JSON text or None (the
/// default context). Raises ContextError (C001) when it is malformed.
Context to_context(py::handle value);

/// The package's Decision for `decision` on `envelope`, with the same fields as
/// to_json(decision, envelope), built without the JSON text; it keeps a copy of the envelope
/// for model_message, computed when first read.
py::object decision_object(const Decision& decision, const Envelope& envelope);
/// model_text(envelope) as (text, flags): the decision's modelMessage and modelMessageFlags.
py::tuple model_message(const Envelope& envelope);
/// The envelope as a dict with the JSON's keys (absent fields left out).
py::dict envelope_dict(const Envelope& envelope);
/// The package's Action for a runner's action.
py::object action_object(const Action& action);
/// The package's Adapted for an adapter's result (its envelope kept for decide()).
py::object adapted_object(const Adapted& adapted);

/// Raises `type` (a RecourseError subclass) carrying `diagnostics` as Diagnostic objects.
[[noreturn]] void raise(const py::object& type, const std::vector<Diagnostic>& diagnostics);

/// Binds the adapters, the stores, Workflow, Health and the runner (state.cpp).
void bind_state(py::module_& m);

}  // namespace recourse::python
