// Python objects to the engine's inputs. A dict is read member by member with the engine's own
// rules, not through JSON text: the envelope's by envelope/members.hpp (the rules both JSON
// readers use: a malformed field is absent with a warning), the context's by wire/context.hpp's
// ContextMembers (read_context()'s: a malformed field is C001). A Python value meets the rule of
// the JSON value json.dumps() would write for it: bool as a boolean, int as an integer, float as
// a number, str as a string, None as null, dict, list and tuple as containers. Two differences,
// both because nothing is parsed: a dict is held to no whole-input limit (ReaderLimits and
// ContextLimits' max_bytes and max_depth, which bound a parser), and a float that is not finite
// (which json.dumps() writes as the invalid token NaN or Infinity) is a malformed number.
#include <cmath>
#include <limits>

#include "binding.hpp"
#include "envelope/fields.hpp"
#include "envelope/members.hpp"
#include "wire/context.hpp"

namespace recourse::python {
namespace {

// A str's UTF-8 bytes. A str with a lone surrogate (which no UTF-8 can carry) gives its
// surrogate-passing bytes, which the UTF-8 checks refuse; `valid` says which.
struct Utf8 {
  std::string_view view;
  py::object keep;  // the bytes object `view` points into, when one was made
  bool valid = true;
};

Utf8 utf8(py::handle s) {
  Py_ssize_t size = 0;
  Utf8 out;
  if (const char* data = PyUnicode_AsUTF8AndSize(s.ptr(), &size)) {
    out.view = {data, size_t(size)};
    return out;
  }
  PyErr_Clear();
  out.keep = py::reinterpret_steal<py::object>(
      PyUnicode_AsEncodedString(s.ptr(), "utf-8", "surrogatepass"));
  if (!out.keep) throw py::error_already_set();
  out.view = {PyBytes_AS_STRING(out.keep.ptr()), size_t(PyBytes_GET_SIZE(out.keep.ptr()))};
  out.valid = false;
  return out;
}

// An int as int64, or the overflow's direction (+1 above, -1 below).
int int64_of(py::handle v, std::int64_t& out) {
  int overflow = 0;
  out = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (out == -1 && PyErr_Occurred()) throw py::error_already_set();
  return overflow;
}

Envelope envelope_of_dict(py::handle dict) {
  const ReaderLimits limits;
  Envelope out;
  detail::EnvelopeMembers members(limits, out);
  bool surrogates = false;
  PyObject *key = nullptr, *value = nullptr;
  Py_ssize_t pos = 0;
  while (PyDict_Next(dict.ptr(), &pos, &key, &value)) {
    if (!PyUnicode_Check(key)) continue;  // json.dumps() writes 1 as "1": no field's key
    const Utf8 k = utf8(key);
    members.key(k.view);
    if (value == Py_None) {
      members.null();
    } else if (PyBool_Check(value)) {
      members.boolean(value == Py_True);
    } else if (PyLong_Check(value)) {
      std::int64_t v = 0;
      const int overflow = int64_of(value, v);
      if (overflow > 0)
        members.unsigned_integer(std::numeric_limits<std::uint64_t>::max());
      else if (overflow < 0)
        members.integer(-1);
      else
        members.integer(v);
    } else if (PyFloat_Check(value)) {
      const double v = PyFloat_AS_DOUBLE(value);
      // repr() is the shortest text that reads back to v: the written value is v itself.
      const std::string token =
          std::isfinite(v) ? py::repr(value).cast<std::string>() : std::string("0");
      members.floating(v, token);
    } else if (PyUnicode_Check(value)) {
      const Utf8 text = utf8(value);
      surrogates = surrogates || !text.valid;
      members.string(text.view);
    } else {
      members.container();
    }
  }
  // A str with a lone surrogate is not UTF-8: dropped as the struct reader drops such bytes.
  return surrogates ? detail::read_fields(std::move(out), limits) : out;
}

// `v` as a context value; a str's bytes are `keep`'s (which must outlive the value).
detail::ContextValue context_value(py::handle v, Utf8& keep) {
  using Kind = detail::ContextValue::Kind;
  detail::ContextValue out;
  if (v.is_none()) {
    out.kind = Kind::Null;
  } else if (PyBool_Check(v.ptr())) {
    out.kind = Kind::Boolean;
    out.boolean = v.ptr() == Py_True;
  } else if (PyLong_Check(v.ptr())) {
    const int overflow = int64_of(v, out.integer);
    out.kind = overflow > 0 ? Kind::Unsigned : overflow < 0 ? Kind::Other : Kind::Integer;
  } else if (PyUnicode_Check(v.ptr())) {
    out.kind = Kind::Text;
    keep = utf8(v);
    out.text = keep.view;
  } else if (PyList_Check(v.ptr()) || PyTuple_Check(v.ptr())) {
    out.kind = Kind::Texts;
    for (py::handle item : v) {
      if (!PyUnicode_Check(item.ptr())) return detail::ContextValue{};
      Utf8 name = utf8(item);
      out.texts.emplace_back(name.view);
    }
  }
  return out;
}

Context context_of_dict(py::handle dict) {
  const ContextLimits limits;
  // The members by index, so they are read (and their errors listed) in the fields' order.
  // The members' keys as str -> index: a str caches its hash, so a key is found by one probe.
  static PyObject* const indexes = [] {
    PyObject* d = PyDict_New();
    for (std::size_t i = 0; d && i < detail::ContextMembers::kCount; ++i) {
      const std::string_view k = detail::ContextMembers::key(i);
      py::object name = py::str(k.data(), k.size());
      py::object index = py::int_(i);
      if (PyDict_SetItem(d, name.ptr(), index.ptr()) < 0) throw py::error_already_set();
    }
    if (!d) throw py::error_already_set();
    return d;
  }();
  PyObject* found[detail::ContextMembers::kCount] = {};
  PyObject *key = nullptr, *value = nullptr;
  Py_ssize_t pos = 0;
  while (PyDict_Next(dict.ptr(), &pos, &key, &value)) {
    if (!PyUnicode_Check(key)) continue;
    PyObject* index = PyDict_GetItemWithError(indexes, key);
    if (index)
      found[PyLong_AsSize_t(index)] = value;
    else if (PyErr_Occurred())
      throw py::error_already_set();
  }
  detail::ContextMembers members(limits);
  for (std::size_t i = 0; i < detail::ContextMembers::kCount; ++i) {
    if (!found[i]) continue;
    // A str with a lone surrogate reads as its surrogate-passing bytes, which fail the UTF-8
    // rule (kept in `text` for the read).
    Utf8 text;
    members.read(i, context_value(found[i], text));
  }
  Result<Context> c = members.finish();
  if (!c.ok()) raise(types().context_error, c.diagnostics());
  return std::move(*c);
}

// A str or bytes object's bytes (a str's as UTF-8), or nullopt for another type.
std::optional<std::string_view> text_of(py::handle value, Utf8& keep) {
  if (PyUnicode_Check(value.ptr())) {
    keep = utf8(value);
    return keep.view;
  }
  if (PyBytes_Check(value.ptr()))
    return std::string_view(PyBytes_AS_STRING(value.ptr()), PyBytes_GET_SIZE(value.ptr()));
  return std::nullopt;
}

}  // namespace

std::optional<Envelope> to_envelope(py::handle value) {
  if (PyDict_Check(value.ptr())) return envelope_of_dict(value);
  if (value.is_none()) return Envelope{};
  Utf8 keep;
  if (auto text = text_of(value, keep)) {
    Result<Envelope> e = read_envelope(*text);
    return e.ok() ? std::optional<Envelope>(std::move(*e)) : std::nullopt;
  }
  if (py::isinstance<Envelope>(value)) return value.cast<Envelope>();
  if (py::hasattr(value, "_native")) return to_envelope(value.attr("_native"));  // Adapted
  return std::nullopt;
}

Context to_context(py::handle value) {
  if (PyDict_Check(value.ptr())) return context_of_dict(value);
  if (value.is_none()) return Context{};
  Utf8 keep;
  const auto text = text_of(value, keep);
  if (!text)
    raise(types().context_error,
          {error_diagnostic("C001",
                            "context must be a dict, JSON text or None, not " +
                                py::str(value.get_type().attr("__name__")).cast<std::string>())});
  Result<Context> c = read_context(*text);
  if (!c.ok()) raise(types().context_error, c.diagnostics());
  return std::move(*c);
}

}  // namespace recourse::python
