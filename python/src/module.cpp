// The extension module recourse._recourse: the engine (compile, reload, decide, log, counters)
// for the package's Python API (recourse/__init__.py), which registers its dataclasses and
// exceptions here first (_register). Every call that works in the engine releases the GIL: a
// compile, a decide, a runner step; conversions to and from Python objects hold it.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "binding.hpp"
#include "model/model.hpp"
#include "model/names.hpp"
#include "recourse/engine.hpp"

namespace recourse::python {
namespace {

// The generation after a load, or CompileError with every diagnostic; warnings are returned.
py::tuple loaded(Result<std::uint64_t> r) {
  if (!r.ok()) raise(types().compile_error, r.diagnostics());
  py::list warnings;
  for (const Diagnostic& d : r.diagnostics())
    warnings.append(types().diagnostic(to_string(d.severity), d.code, d.file, d.line, d.column,
                                       d.offset, d.message, d.help));
  return py::make_tuple(*r, warnings);
}

// Compiles files and directories into the engine's live bundle or its candidate, without the
// GIL.
py::tuple load_paths(PyEngine& self, const std::vector<std::string>& paths, bool candidate) {
  Result<std::uint64_t> r = [&] {
    py::gil_scoped_release release;
    return candidate ? self.engine.reload_candidate_paths(paths) : self.engine.reload_paths(paths);
  }();
  return loaded(std::move(r));
}

// The same for (path, text) sources.
py::tuple load_sources(PyEngine& self,
                       const std::vector<std::pair<std::string, std::string>>& sources,
                       bool candidate) {
  std::vector<Source> list;
  for (const auto& [path, text] : sources) list.push_back({path, text});
  Result<std::uint64_t> r = [&] {
    py::gil_scoped_release release;
    return candidate ? self.engine.reload_candidate(list) : self.engine.reload(list);
  }();
  return loaded(std::move(r));
}

py::object decide(const PyEngine& self, py::handle envelope, py::handle context) {
  const std::optional<Envelope> e = to_envelope(envelope);
  const Context c = to_context(context);
  const Envelope unread;
  Decision d;
  {
    py::gil_scoped_release release;
    d = e ? self.engine.decide(*e, c) : self.engine.unreadable(c);
  }
  // The decision's strings view this thread's snapshot, valid until its next decide().
  return decision_object(d, e ? *e : unread);
}

}  // namespace
}  // namespace recourse::python

PYBIND11_MODULE(_recourse, m) {
  using namespace recourse;
  using namespace recourse::python;
  m.doc() = "The recourse engine (C++); use the package `recourse`, not this module.";

  m.def(
      "_register",
      [](py::kwargs k) {
        Types& t = types();
        auto get = [&](const char* name) { return py::reinterpret_borrow<py::object>(k[name]); };
        auto members = [&](const char* name) { return py::tuple(py::list(get(name))); };
        t.decision = get("Decision");
        t.budget = get("Budget");
        t.budgets = get("Budgets");
        t.warning = get("Warning");
        t.diagnostic = get("Diagnostic");
        t.action = get("Action");
        t.adapted = get("Adapted");
        t.route = members("Route");
        t.key_directive = members("KeyDirective");
        t.step = members("Step");
        t.ending = members("Ending");
        t.circuit = members("Circuit");
        t.error = get("RecourseError");
        t.compile_error = get("CompileError");
        t.context_error = get("ContextError");
        t.input_error = get("InputError");
        t.store_error = get("StoreError");
        t.runner_error = get("RunnerError");
      },
      "Registers the package's types (recourse/__init__.py calls it once).");

  // The engine's own spellings, which the package's enums must match (tests/test_types.py).
  auto spellings = [](auto last) {
    py::list out;
    for (int i = 0; i <= int(last); ++i) out.append(to_string(decltype(last)(i)));
    return out;
  };
  auto names = [](const auto& values) {
    py::list out;
    for (std::string_view v : values) out.append(py::str(v.data(), v.size()));
    return out;
  };
  m.attr("BUILTIN_CODES") = names(detail::kBuiltinCodes);
  m.attr("ROUTES") = spellings(Route::Stop);
  m.attr("KEY_DIRECTIVES") = spellings(KeyDirective::New);
  m.attr("STEPS") = spellings(Step::Done);
  m.attr("ENDINGS") = spellings(Ending::Cancelled);
  m.attr("SIDE_EFFECTS") = names(detail::Names<SideEffect>::kValues);
  m.attr("CIRCUITS") = names(detail::Names<CircuitState>::kValues);

  py::class_<Envelope>(m, "_Envelope", "An envelope as the engine read it (warnings included).")
      .def("to_dict", &envelope_dict, "The envelope's fields as a dict with the JSON's keys.")
      .def("model_message", &model_message, "model_text(): (text, flags).")
      .def("__eq__", [](const Envelope& a, const Envelope& b) {
        auto same = [](const EnvelopeWarning& x, const EnvelopeWarning& y) {
          return x.kind == y.kind && x.field == y.field && x.message == y.message;
        };
        return to_json(a) == to_json(b) && std::equal(a.warnings.begin(), a.warnings.end(),
                                                      b.warnings.begin(), b.warnings.end(), same);
      });

  py::class_<PyEngine>(m, "_Engine", "recourse::Engine: the bundle in use, reloadable.")
      .def(py::init<bool>(), py::arg("count") = false)
      .def(
          "load_paths",
          [](PyEngine& self, const std::vector<std::string>& paths) {
            return load_paths(self, paths, false);
          },
          "Compiles files and directories and swaps the bundle in: (generation, warnings); "
          "CompileError keeps the bundle in use.")
      .def(
          "load_sources",
          [](PyEngine& self, const std::vector<std::pair<std::string, std::string>>& sources) {
            return load_sources(self, sources, false);
          },
          "Compiles (path, text) sources as one bundle and swaps it in, as load_paths.")
      .def(
          "load_candidate_paths",
          [](PyEngine& self, const std::vector<std::string>& paths) {
            return load_paths(self, paths, true);
          },
          "Compiles files and directories as the shadow candidate (engine.hpp, \"Shadow "
          "policies\"): (generation, warnings); CompileError keeps both bundles.")
      .def(
          "load_candidate_sources",
          [](PyEngine& self, const std::vector<std::pair<std::string, std::string>>& sources) {
            return load_sources(self, sources, true);
          },
          "Compiles (path, text) sources as the shadow candidate, as load_candidate_paths.")
      .def("drop_candidate", [](PyEngine& self) { return self.engine.drop_candidate(); })
      .def("shadow_counters",
           [](const PyEngine& self) { return json_loads(to_json(self.engine.shadow_counters())); })
      .def("decide", &decide, py::arg("envelope"), py::arg("context") = py::none(),
           "Decides: an envelope (dict, JSON text, Adapted or None) and a context (dict, JSON "
           "text or None) to a Decision.")
      .def_property_readonly("generation",
                             [](const PyEngine& self) { return self.engine.generation(); })
      .def("counters",
           [](const PyEngine& self) { return json_loads(to_json(self.engine.counters())); })
      .def(
          "set_log",
          [](PyEngine& self, py::object fn) {
            if (fn.is_none()) return self.engine.set_log({});
            // Called on the deciding thread, which does not hold the GIL while it decides; the
            // last snapshot holding the log may be dropped there too, so the deleter takes it.
            std::shared_ptr<py::object> callback(new py::object(std::move(fn)), [](py::object* o) {
    // A thread's snapshot may hold the last reference until that thread exits, the
    // main thread's past the interpreter's end: then the callable is leaked.
#if PY_VERSION_HEX >= 0x030D0000
              if (!Py_IsInitialized() || Py_IsFinalizing()) return;
#else
              if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
#endif
              py::gil_scoped_acquire gil;
              delete o;
            });
            return self.engine.set_log([callback](const DecisionRecord& r) {
              const std::string line = to_json(r);
              py::gil_scoped_acquire gil;
              try {
                (*callback)(json_loads(line));
              } catch (py::error_already_set& e) {
                e.discard_as_unraisable("recourse decision log");
              }
            });
          },
          "Sets (None: removes) the decision log: fn(record dict) per decision.");

  bind_state(m);
}
