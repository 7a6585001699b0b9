// The engine's outputs as the package's dataclasses (recourse/types.py), built field by field
// without JSON text: an instance's __dict__ is filled directly (object.__new__, then the dict),
// which skips the dataclass's generated __init__ and costs a fraction of it. The field names are
// the JSON keys in snake_case (docs/python.md); what to_json(decision, envelope) omits is None.
#include "binding.hpp"

#include <pybind11/stl.h>

#include "model/fields.hpp"
#include "wire/decision.hpp"

namespace recourse::python {
namespace {

// A new reference to `text` as str; bytes that are not UTF-8 are replaced (U+FFFD).
PyObject* str_of(std::string_view text) {
  PyObject* s = PyUnicode_DecodeUTF8(text.data(), Py_ssize_t(text.size()), "replace");
  if (!s) throw py::error_already_set();
  return s;
}

PyObject* int_of(std::int64_t v) {
  return PyLong_FromLongLong(v);
}

template <typename T>
PyObject* optional_of(const std::optional<T>& v) {
  if (!v) Py_RETURN_NONE;
  if constexpr (std::is_same_v<T, bool>)
    return PyBool_FromLong(*v);
  else if constexpr (std::is_same_v<T, std::string>)
    return str_of(*v);
  else
    return int_of(*v);
}

PyObject* text_or_none(std::string_view v) {
  if (v.empty()) Py_RETURN_NONE;
  return str_of(v);
}

// Fills an instance's attributes: set(name, new reference), then make(cls).
class Fields {
 public:
  Fields() : dict_(py::reinterpret_steal<py::object>(PyDict_New())) {
    if (!dict_) throw py::error_already_set();
  }
  /// Sets `key` (an interned name) to the new reference `value` (stolen).
  void set(PyObject* key, PyObject* value) {
    if (!value) throw py::error_already_set();
    const int r = PyDict_SetItem(dict_.ptr(), key, value);
    Py_DECREF(value);
    if (r < 0) throw py::error_already_set();
  }
  /// An instance of `cls` with these attributes, its __init__ not called.
  py::object make(const py::object& cls) {
    static PyObject* const empty = PyTuple_New(0);
    auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
    auto obj = py::reinterpret_steal<py::object>(PyBaseObject_Type.tp_new(type, empty, nullptr));
    if (!obj || PyObject_GenericSetDict(obj.ptr(), dict_.ptr(), nullptr) < 0)
      throw py::error_already_set();
    return obj;
  }

 private:
  py::object dict_;
};

// An interned attribute name, made once.
#define RECOURSE_NAME(name)                                            \
  static PyObject* const k_##name = PyUnicode_InternFromString(#name); \
  (void)k_##name

PyObject* member(const py::object& enum_members, std::size_t i) {
  PyObject* m = PyTuple_GetItem(enum_members.ptr(), Py_ssize_t(i));
  if (!m) throw py::error_already_set();
  Py_INCREF(m);
  return m;
}

PyObject* budget(const BudgetLeft& b) {
  RECOURSE_NAME(before);
  RECOURSE_NAME(after);
  auto value = [](std::int64_t v) -> PyObject* {
    if (v == kUnlimited) Py_RETURN_NONE;
    return int_of(v);
  };
  Fields f;
  f.set(k_before, value(b.before));
  f.set(k_after, value(b.after));
  return f.make(types().budget).release().ptr();
}

PyObject* warnings_of(const std::vector<EnvelopeWarning>& warnings) {
  RECOURSE_NAME(kind);
  RECOURSE_NAME(field);
  RECOURSE_NAME(message);
  auto list = py::reinterpret_steal<py::object>(PyList_New(Py_ssize_t(warnings.size())));
  if (!list) throw py::error_already_set();
  for (std::size_t i = 0; i < warnings.size(); ++i) {
    Fields f;
    f.set(k_kind, str_of(warnings[i].kind));
    f.set(k_field, str_of(warnings[i].field));
    f.set(k_message, str_of(warnings[i].message));
    PyList_SET_ITEM(list.ptr(), Py_ssize_t(i), f.make(types().warning).release().ptr());
  }
  return list.release().ptr();
}

}  // namespace

py::object json_loads(const std::string& text) {
  // Never destroyed: a static py::object would be released after the interpreter's end.
  static auto* const loads = new py::object(py::module_::import("json").attr("loads"));
  return (*loads)(py::str(text));
}

Types& types() {
  static Types* t = new Types();  // never destroyed: it outlives the interpreter's shutdown
  return *t;
}

py::object decision_object(const Decision& d, const Envelope& e) {
  RECOURSE_NAME(route);
  RECOURSE_NAME(delay_ms);
  RECOURSE_NAME(jitter_ms);
  RECOURSE_NAME(rule);
  RECOURSE_NAME(reason);
  RECOURSE_NAME(target);
  RECOURSE_NAME(policy);
  RECOURSE_NAME(policy_hash);
  RECOURSE_NAME(exhausted);
  RECOURSE_NAME(attempt);
  RECOURSE_NAME(backoff_attempt);
  RECOURSE_NAME(attempts_left);
  RECOURSE_NAME(repairs_left);
  RECOURSE_NAME(retry_after_ms);
  RECOURSE_NAME(retry_at_ms);
  RECOURSE_NAME(timeout_ms);
  RECOURSE_NAME(budgets);
  RECOURSE_NAME(attempts);
  RECOURSE_NAME(repairs);
  RECOURSE_NAME(cost);
  RECOURSE_NAME(time_ms);
  RECOURSE_NAME(idempotency_key);
  RECOURSE_NAME(warnings);
  RECOURSE_NAME(nearest_code);
  RECOURSE_NAME(trace_id);
  RECOURSE_NAME(_envelope);
  const Types& t = types();
  Fields f;
  f.set(k_route, member(t.route, std::size_t(d.route)));
  f.set(k_delay_ms, int_of(d.delay_ms));
  f.set(k_jitter_ms, d.route == Route::Retry ? int_of(d.jitter_ms) : (Py_INCREF(Py_None), Py_None));
  f.set(k_rule, str_of(d.rule));
  f.set(k_reason, text_or_none(d.reason));
  f.set(k_target, text_or_none(d.target));
  f.set(k_policy, str_of(d.policy));
  f.set(k_policy_hash, str_of(d.policy_hash));
  f.set(k_exhausted, text_or_none(d.exhausted));
  f.set(k_attempt, int_of(d.attempt));
  f.set(k_backoff_attempt,
        d.backoff_attempt ? int_of(d.backoff_attempt) : (Py_INCREF(Py_None), Py_None));
  f.set(k_attempts_left, int_of(d.attempts_left()));
  f.set(k_repairs_left, int_of(d.repairs_left()));
  f.set(k_retry_after_ms, optional_of(d.retry_after_ms));
  f.set(k_retry_at_ms, optional_of(d.retry_at_ms));
  f.set(k_timeout_ms, optional_of(d.timeout_ms));
  Fields b;
  b.set(k_attempts, budget(d.attempts));
  b.set(k_repairs, budget(d.repairs));
  b.set(k_cost, budget(d.cost));
  b.set(k_time_ms, budget(d.time_ms));
  f.set(k_budgets, b.make(t.budgets).release().ptr());
  f.set(k_idempotency_key, member(t.key_directive, std::size_t(d.idempotency_key)));
  f.set(k_warnings, warnings_of(detail::decision_warnings(d, e)));
  f.set(k_nearest_code, text_or_none(d.nearest_code));
  f.set(k_trace_id, str_of(trace_id(d, e)));
  // model_message and model_message_flags are computed from the envelope when first read.
  f.set(k__envelope, py::cast(e).release().ptr());
  return f.make(t.decision);
}

py::tuple model_message(const Envelope& e) {
  const ModelText model = model_text(e);
  py::list flags;
  for (const auto& [set, name] :
       {std::pair{model.stripped, "stripped"}, std::pair{model.redacted, "redacted"},
        std::pair{model.instruction_like, "instruction_like"},
        std::pair{model.truncated, "truncated"}})
    if (set) flags.append(name);
  return py::make_tuple(py::reinterpret_steal<py::object>(str_of(model.text)), flags);
}

py::dict envelope_dict(const Envelope& e) {
  py::dict out;
  detail::for_each_envelope_field([&](const detail::Field& field, auto member) {
    const auto& value = e.*member;
    if (value)
      out[py::str(field.key.data(), field.key.size())] =
          py::reinterpret_steal<py::object>(optional_of(value));
  });
  return out;
}

py::object adapted_object(const Adapted& a) {
  RECOURSE_NAME(envelope);
  RECOURSE_NAME(mapping);
  RECOURSE_NAME(warnings);
  RECOURSE_NAME(idempotent);
  RECOURSE_NAME(_native);
  Fields f;
  f.set(k_envelope, envelope_dict(a.envelope).release().ptr());
  f.set(k_mapping, str_of(a.mapping));
  f.set(k_warnings, warnings_of(a.envelope.warnings));
  f.set(k_idempotent, optional_of(a.idempotent));
  f.set(k__native, py::cast(a.envelope).release().ptr());
  return f.make(types().adapted);
}

py::object action_object(const Action& a) {
  RECOURSE_NAME(step);
  RECOURSE_NAME(ending);
  RECOURSE_NAME(tool);
  RECOURSE_NAME(arguments);
  RECOURSE_NAME(idempotency_key);
  RECOURSE_NAME(timeout_ms);
  RECOURSE_NAME(wait_ms);
  RECOURSE_NAME(attempt);
  RECOURSE_NAME(elapsed_ms);
  RECOURSE_NAME(decision);
  RECOURSE_NAME(envelope);
  const Types& t = types();
  Fields f;
  f.set(k_step, member(t.step, std::size_t(a.step)));
  f.set(k_ending, a.step == Step::Done ? member(t.ending, std::size_t(a.ending))
                                       : (Py_INCREF(Py_None), Py_None));
  f.set(k_tool, str_of(a.tool));
  // Arguments given as JSON come back as the Python value; other text as the str.
  py::object arguments = py::none();
  if (!a.arguments.empty()) {
    try {
      arguments = json_loads(a.arguments);
    } catch (const py::error_already_set&) {
      arguments = py::str(a.arguments);
    }
  }
  f.set(k_arguments, arguments.release().ptr());
  f.set(k_idempotency_key, text_or_none(a.idempotency_key));
  f.set(k_timeout_ms, optional_of(a.timeout_ms));
  f.set(k_wait_ms, int_of(a.wait_ms));
  f.set(k_attempt, int_of(a.attempt));
  f.set(k_elapsed_ms, int_of(a.elapsed_ms));
  f.set(k_decision, a.decision ? decision_object(*a.decision, a.envelope).release().ptr()
                               : (Py_INCREF(Py_None), Py_None));
  f.set(k_envelope,
        a.decision ? envelope_dict(a.envelope).release().ptr() : (Py_INCREF(Py_None), Py_None));
  return f.make(t.action);
}

void raise(const py::object& type, const std::vector<Diagnostic>& diagnostics) {
  py::list list;
  for (const Diagnostic& d : diagnostics)
    list.append(types().diagnostic(to_string(d.severity), d.code, d.file, d.line, d.column,
                                   d.offset, d.message, d.help));
  py::object error = type(first_message(diagnostics), list);
  PyErr_SetObject(type.ptr(), error.ptr());
  throw py::error_already_set();
}

}  // namespace recourse::python
