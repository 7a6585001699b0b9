// The adapters, the stores, Workflow, Health and the runner's step machine, for recourse/
// adapters.py, recourse/state.py and recourse/runner.py. Store and runner calls may wait on a
// SQLite file or a Redis server: each releases the GIL.
#include <pybind11/stl.h>

#include <mutex>

#include "binding.hpp"
#include "model/names.hpp"
#include "recourse/state.hpp"
#include "recourse/store.hpp"

namespace recourse::python {
namespace {

// The adapted envelope, or InputError (N001).
py::object adapted(Result<Adapted> r) {
  if (!r.ok()) raise(types().input_error, r.diagnostics());
  return adapted_object(*r);
}

// A Workflow with the mutex its runners take: Workflow is not thread-safe, so two runners
// sharing one (a host's mistake) take turns rather than race.
struct PyWorkflow {
  PyWorkflow(std::shared_ptr<Store> s, std::string scope)
      : store(s), workflow(std::move(s), std::move(scope)) {}
  std::shared_ptr<Store> store;
  Workflow workflow;
  std::mutex mutex;
};

struct PyHealth {
  explicit PyHealth(std::shared_ptr<Store> s) : store(s), health(std::move(s)) {}
  std::shared_ptr<Store> store;
  Health health;  // thread-safe
};

// One runner. `mutex` keeps two Python threads from driving it at once (the runner is for one
// thread at a time); cancel() takes no lock.
struct PyRunner {
  std::unique_ptr<Runner> runner;
  PyWorkflow* workflow = nullptr;
  std::mutex mutex;
};

std::optional<SideEffect> side_effect_named(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  if (auto e = detail::enum_of<SideEffect>(*name)) return e;
  raise(types().runner_error,
        {error_diagnostic("R001", "side effect must be " + detail::names_list<SideEffect>())});
}

std::optional<Protocol> protocol_named(const std::optional<std::string>& name) {
  if (!name || *name == "auto") return std::nullopt;
  if (auto p = protocol_of(*name)) return p;
  raise(types().input_error, {error_diagnostic("N001", "unknown protocol \"" + *name + "\"")});
}

Status report(PyRunner& self, const std::string& kind, py::handle envelope,
              const std::optional<std::string>& raw, const std::optional<std::string>& protocol,
              const std::optional<std::string>& side_effect,
              const std::optional<std::string>& arguments, std::int64_t now_ms) {
  Outcome o;
  if (kind == "success")
    o.kind = Outcome::Kind::Success;
  else if (kind == "failure")
    o.kind = Outcome::Kind::Failure;
  else if (kind == "resume")
    o.kind = Outcome::Kind::Resume;
  else if (kind == "abandon")
    o.kind = Outcome::Kind::Abandon;
  else
    raise(types().runner_error, {error_diagnostic("R001", "unknown outcome \"" + kind + "\"")});
  if (!envelope.is_none()) {
    // An envelope that cannot be read is decided as unreadable: the raw form of nothing.
    o.envelope = to_envelope(envelope);
    if (!o.envelope) o.raw = "null";
  }
  if (raw) o.raw = *raw;
  o.protocol = protocol_named(protocol);
  o.side_effect = side_effect_named(side_effect);
  o.arguments = arguments;
  py::gil_scoped_release release;
  std::scoped_lock lock(self.mutex, self.workflow->mutex);
  return self.runner->report(o, now_ms);
}

}  // namespace

void bind_state(py::module_& m) {
  m.def("_from_http",
        [](int status, const Headers& headers, py::bytes body, std::optional<std::int64_t> now) {
          const std::string text = body;
          return adapted(from_http(status, headers, text, now));
        });
  m.def("_from_transport_error",
        [](const std::string& error) { return adapted(from_transport_error(error)); });
  m.def("_from_grpc",
        [](const std::string& status, const std::string& message, const Headers& metadata) {
          return adapted(from_grpc(status, message, metadata));
        });
  m.def("_from_jsonrpc",
        [](std::int64_t code, const std::string& message, const std::string& data) {
          return adapted(from_jsonrpc(code, message, data));
        });
  m.def("_from_mcp", [](const std::string& reply) { return adapted(from_mcp(reply)); });
  m.def("_from_raw", [](const std::optional<std::string>& protocol, const std::string& raw,
                        std::optional<std::int64_t> now) {
    return adapted(from_raw(protocol_named(protocol), raw, now));
  });

  py::class_<Store, std::shared_ptr<Store>>(m, "_Store", "A state store (recourse::Store).");
  m.def("_open_store",
        [](const std::string& spec, std::int64_t state_ttl_ms, std::int64_t ledger_ttl_ms,
           std::int64_t timeout_ms, std::int64_t busy_ms, std::int64_t down_ms) {
          const StoreOptions options{state_ttl_ms, ledger_ttl_ms, timeout_ms, busy_ms, down_ms};
          Result<std::shared_ptr<Store>> r = [&] {
            py::gil_scoped_release release;
            return open_store(spec, options);
          }();
          if (!r.ok()) raise(types().store_error, r.diagnostics());
          py::list warnings;
          for (const Diagnostic& d : r.diagnostics()) warnings.append(d.message);
          return py::make_tuple(*r, warnings);
        });

  py::class_<PyWorkflow>(m, "_Workflow")
      .def(py::init<std::shared_ptr<Store>, std::string>())
      .def("to_json", [](PyWorkflow& self) {
        std::scoped_lock lock(self.mutex);
        return self.workflow.to_json();
      });
  py::class_<PyHealth>(m, "_Health")
      .def(py::init<std::shared_ptr<Store>>())
      .def("circuit",
           [](const PyHealth& self, const std::string& tool) {
             ToolHealth h;
             {
               py::gil_scoped_release release;
               h = self.health.get(tool);
             }
             return py::reinterpret_borrow<py::object>(
                 PyTuple_GetItem(types().circuit.ptr(), Py_ssize_t(h.circuit)));
           })
      .def("to_json", [](const PyHealth& self) { return self.health.to_json(); });

  py::class_<PyRunner>(m, "_Runner")
      .def(py::init([](const PyEngine& engine, PyWorkflow& workflow, PyHealth& health,
                       std::shared_ptr<Store> store, std::string tool, std::string arguments,
                       std::string operation_id, std::string workflow_id,
                       std::optional<std::int64_t> deadline_ms, std::int64_t max_replacements,
                       std::int64_t ledger_lease_ms) {
             RunnerSpec spec;
             spec.tool = std::move(tool);
             spec.arguments = std::move(arguments);
             spec.operation_id = std::move(operation_id);
             spec.workflow_id = std::move(workflow_id);
             spec.deadline_ms = deadline_ms;
             spec.max_replacements = max_replacements;
             spec.ledger_lease_ms = ledger_lease_ms;
             auto r = Runner::make(engine.engine, workflow.workflow, health.health,
                                   std::move(store), std::move(spec));
             if (!r.ok()) raise(types().runner_error, r.diagnostics());
             auto out = std::make_unique<PyRunner>();
             out->runner = std::move(*r);
             out->workflow = &workflow;
             return out;
           }),
           // The runner holds the engine, the workflow and the health by reference.
           py::keep_alive<1, 2>(), py::keep_alive<1, 3>(), py::keep_alive<1, 4>())
      .def("next",
           [](PyRunner& self, std::int64_t now_ms) {
             Action a;
             {
               py::gil_scoped_release release;
               std::scoped_lock lock(self.mutex, self.workflow->mutex);
               a = self.runner->next(now_ms);
             }
             return action_object(a);
           })
      .def("report",
           [](PyRunner& self, const std::string& kind, py::handle envelope,
              const std::optional<std::string>& raw, const std::optional<std::string>& protocol,
              const std::optional<std::string>& side_effect,
              const std::optional<std::string>& arguments, std::int64_t now_ms) {
             const Status s =
                 report(self, kind, envelope, raw, protocol, side_effect, arguments, now_ms);
             if (!s.ok()) raise(types().runner_error, s.diagnostics());
           })
      .def("set_arguments",
           [](PyRunner& self, std::string arguments) {
             Status s = [&] {
               py::gil_scoped_release release;
               std::scoped_lock lock(self.mutex);
               return self.runner->set_arguments(std::move(arguments));
             }();
             if (!s.ok()) raise(types().runner_error, s.diagnostics());
           })
      .def("cancel", [](PyRunner& self) { self.runner->cancel(); });
}

}  // namespace recourse::python
