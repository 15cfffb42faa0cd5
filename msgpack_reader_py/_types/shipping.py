"""Record types sent to other processes: the worker processes of a split read, Dask's
workers and Ray's tasks, from wherever the type was defined.

A class the receiving process can import travels by reference (its module and name), as
pickle sends it. One it cannot (defined in ``__main__``: a notebook, ``python -c``, standard
input or a script; or inside a function) travels by value, as cloudpickle sends it, with two
differences:

- What msgspec caches on a class (``__msgspec_cache__``, its fields as msgspec worked them
  out, set on the class the first time it decodes one) stays behind: it cannot be pickled,
  and it would change the class's bytes, and so Dask's token of it, once the class had been
  used.
- A ``msgspec.Struct`` is made again with its fields and options. cloudpickle makes an empty
  class and sets its attributes afterwards: too late for a Struct, whose fields are fixed
  when it is made (it would arrive with none).

A class sent by value carries a key: where it arrives it is made once per process, kept
under the key, and where it was defined the key finds the class itself. Instances of a class
sent by value (the caller's own, and each copy) are reduced with their class by that key
(:func:`_reduce_by_key`, made the class's ``__reduce_ex__`` unless it has one): whichever
pickler an engine moves records with, they reach the process that defined their class as its
own class's, and any other with the class made as above (a Struct with its fields).

cloudpickle comes with Dask, Ray and pyspark; the core does not need it. Without it a class travels
by reference only, and one that cannot (``__main__`` with no file to run again, a class made
in a function) is refused at once in one line that names it and says what to do
(:class:`UnshippableType`); so is a class a worker cannot import, from the worker.
"""

from __future__ import annotations

import copyreg
import hashlib
import importlib
import inspect
import io
import os
import pickle
import sys
import threading
import types
import typing
import uuid
import weakref
from collections.abc import Callable
from typing import Any

import msgspec

from .record_type import type_label

__all__ = ["Shipped", "UnshippableType", "shipped_values"]


class UnshippableType(TypeError):
    """A record type (or a hook) that cannot be sent to, or made in, another process; the
    message says which, why, and what to do."""


class Shipped:
    """A value (a record type, or the arguments of a read) as it travels to other processes.

    ``value`` is the value itself where it was made; elsewhere it is made from the pickled
    bytes, once per process, on first use (so a Dask scheduler that only forwards it never
    makes it). ``label`` names it in errors (``type_label`` of the record type). With
    ``by_value=False`` nothing is sent by value: for a process forked from this one, which
    has every class already.
    """

    __slots__ = ("_by_value", "_payload", "_value", "label")

    _MISSING: Any = object()

    def __init__(self, value: Any, label: str, *, by_value: bool = True) -> None:
        self.label = label
        self._value = value
        self._payload: bytes | None = None
        self._by_value = by_value

    @classmethod
    def arrived(cls, label: str, payload: bytes) -> Shipped:
        """A value as another process sent it: made from ``payload`` when first used."""
        shipped = cls.__new__(cls)
        shipped.label = label
        shipped._value = cls._MISSING
        shipped._payload = payload
        shipped._by_value = True
        return shipped

    @property
    def value(self) -> Any:
        if self._value is Shipped._MISSING:
            assert self._payload is not None
            self._value = _received(self._payload, self.label)
        return self._value

    @property
    def payload(self) -> bytes:
        """The value's pickled bytes (made once): what travels."""
        if self._payload is None:
            self._payload = _dumps(self._value, self.label, self._by_value)
        return self._payload

    def __reduce__(self) -> tuple[Any, ...]:
        return (Shipped.arrived, (self.label, self.payload))

    def __dask_tokenize__(self) -> tuple[str, str]:
        # The bytes that travel, with nothing cached in them: the same type gives the same
        # token however often it was used, and a type defined again gives another.
        return ("msgpack_reader_py.Shipped", hashlib.sha256(self.payload).hexdigest())

    def __repr__(self) -> str:
        return f"<Shipped {self.label}>"


def shipped_values(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """``values`` with each :class:`Shipped` one replaced by its value."""
    return tuple(v.value if isinstance(v, Shipped) else v for v in values)


# --- sending ---------------------------------------------------------------------------------


def _dumps(value: Any, label: str, by_value: bool) -> bytes:
    """``value`` pickled to travel: by pickle, by reference, where every class and function in
    it can be imported anywhere (or ``by_value`` is false); else by cloudpickle (see the
    module's docstring), or, without it, by reference where a process started afresh finds
    them (a script's ``__main__``, which it runs again), refused where it does not."""
    if not by_value:
        return _pickled(pickle.Pickler, value, label)
    noting = _Unimportable(io.BytesIO())
    try:
        noting.dump(value)
    except (pickle.PicklingError, TypeError, AttributeError):
        noting.found.setdefault("", "")  # something pickle cannot send by reference
    else:
        if not noting.found:
            return noting.file.getvalue()
    pickler = _cloud_pickler()
    if pickler is not None:
        return _pickled(pickler, value, label)
    refused = {name: where for name, where in noting.found.items() if name and where != _SCRIPT}
    if refused:
        names = sorted(refused)
        one = len(names) == 1
        raise UnshippableType(
            f"the record type {label} cannot be sent to worker processes: "
            f"{' and '.join(names)} {'is' if one else 'are'} defined {refused[names[0]]}; "
            f"define {'it' if one else 'them'} in a module, or install cloudpickle "
            f"(then {'it is' if one else 'they are'} sent by value)"
        )
    return _pickled(pickle.Pickler, value, label)


def _pickled(pickler: type[pickle.Pickler], value: Any, label: str) -> bytes:
    buffer = io.BytesIO()
    try:
        pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as exc:
        raise UnshippableType(
            f"the record type {label} cannot be sent to other processes ({_first_line(exc)}):"
            " define what it needs in a module they can import"
        ) from exc
    return buffer.getvalue()


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().partition("\n")[0] or type(exc).__name__


_MAIN = "in __main__ (a notebook, python -c or standard input), which they cannot import"
_SCRIPT = "in the script"


class _Unimportable(pickle.Pickler):
    """A pickler by reference that notes the classes and functions of what it pickles that
    may not be importable where it arrives: those defined in a function, or in ``__main__``
    (``where`` each is, by name)."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.file = file
        self.found: dict[str, str] = {}

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, (type, types.FunctionType)):
            name = getattr(obj, "__qualname__", "")
            if "<locals>" in name:
                self.found[name.rpartition("<locals>.")[2]] = "inside a function"
            elif getattr(obj, "__module__", None) == "__main__":
                found = _main_runs_again() and _in_main(name) is obj
                self.found[name] = _SCRIPT if found else _MAIN
        return NotImplemented


def _in_main(qualname: str) -> Any:
    """What ``__main__`` holds under ``qualname`` (``None``: nothing)."""
    found: Any = sys.modules.get("__main__")
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found


def _main_runs_again() -> bool:
    """Whether a process started afresh runs this one's ``__main__`` again (its classes then
    exist there too): a script or a module run with ``-m``, not a notebook, ``python -c``
    or standard input."""
    main = sys.modules.get("__main__")
    if getattr(getattr(main, "__spec__", None), "name", None) is not None:
        return True
    path = getattr(main, "__file__", None)
    return isinstance(path, str) and os.path.isfile(path)


def _cloud_pickler() -> type[pickle.Pickler] | None:
    """The pickler of :func:`_dumps`, made on first use: cloudpickle's with the changes the
    module's docstring lists; ``None`` without cloudpickle."""
    global _PICKLER
    if _PICKLER is None:
        # Ray and pyspark bring copies of their own: a Spark job's workers have pyspark's.
        for name in ("cloudpickle", "ray.cloudpickle", "pyspark.cloudpickle"):
            try:
                cloudpickle = importlib.import_module(name)
            except ImportError:
                continue
            _PICKLER = _pickler_of(cloudpickle.Pickler)
            break
    return _PICKLER


_PICKLER: type[pickle.Pickler] | None = None


def _pickler_of(base: type[pickle.Pickler]) -> type[pickle.Pickler]:
    class _Pickler(base):  # type: ignore[valid-type,misc]
        def reducer_override(self, obj: Any) -> Any:
            if type(obj) is msgspec.Meta:  # a constraint (Annotated[int, Meta(ge=0)])
                return (_meta, (_meta_keywords(obj),))
            if getattr(type(obj), "__reduce_ex__", None) is _reduce_by_key:
                # Here its class goes by value, in this stream, as it goes alone: the same
                # bytes whether or not its instances were sent by key yet.
                return _usual_reduce(obj, pickle.HIGHEST_PROTOCOL)
            reduced = super().reducer_override(obj)
            if not isinstance(obj, type) or not _by_value(reduced):
                return reduced
            _send_by_key(obj)  # after its attributes were read: they do not hold it
            if _is_struct(obj):
                return _struct_reduced(obj)
            make, arguments, (attributes, slots) = reduced[:3]
            state = (reduced[5], (_travelling(obj, attributes), slots))
            return (_made, (_key_of(obj), make, arguments), state, None, None, _filled)

    return _Pickler


# What a Meta was made with is what it holds: its public attributes, those not None.
_META_FIELDS = tuple(
    name
    for name in dir(msgspec.Meta)
    if not name.startswith("_") and not callable(getattr(msgspec.Meta, name))
)


def _meta_keywords(meta: msgspec.Meta) -> dict[str, Any]:
    """The keywords ``meta`` was made with (msgspec cannot pickle a Meta)."""
    held = {name: getattr(meta, name) for name in _META_FIELDS}
    return {name: value for name, value in held.items() if value is not None}


def _meta(keywords: dict[str, Any]) -> msgspec.Meta:
    """A Meta made again where it arrives."""
    return msgspec.Meta(**keywords)


def _by_value(reduced: Any) -> bool:
    """Whether cloudpickle's reduction of a class sends it by value: a skeleton made empty,
    then filled by a state setter (a builtin type reduces to two items)."""
    return isinstance(reduced, tuple) and len(reduced) == 6 and reduced[5] is not None


def _is_struct(cls: type) -> bool:
    return isinstance(cls, type) and issubclass(cls, msgspec.Struct) and cls is not msgspec.Struct


_CACHES = frozenset({"__msgspec_cache__", "__slotnames__"})
"""What is cached on a class once it is used (by msgspec, by pickle's ``copyreg``): left
behind, to be worked out again where the class arrives."""


def _travelling(cls: type, attributes: dict[str, Any]) -> dict[str, Any]:
    """A class's attributes as they travel: no caches, no :func:`_reduce_by_key` (which
    this module gave it), and annotations written as strings (``from __future__ import
    annotations``) resolved here, where the names they use exist."""
    kept = {
        name: value
        for name, value in attributes.items()
        if name not in _CACHES and value is not _reduce_by_key
    }
    if "__annotations__" in kept:
        kept["__annotations__"] = _resolved(cls, kept["__annotations__"])
    return kept


def _resolved(cls: type, annotations: dict[str, Any]) -> dict[str, Any]:
    if not any(isinstance(a, str) for a in annotations.values()):
        return annotations
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:  # noqa: BLE001 - what cannot be resolved here travels as it is
        return annotations
    return {name: hints.get(name, value) for name, value in annotations.items()}


_STRUCT_OPTIONS = (
    "array_like",
    "cache_hash",
    "dict",
    "eq",
    "forbid_unknown_fields",
    "frozen",
    "gc",
    "omit_defaults",
    "order",
    "repr_omit_defaults",
    "tag",
    "tag_field",
    "weakref",
)


def _struct_reduced(cls: Any) -> tuple[Any, ...]:
    """A Struct class by value: made with its own fields (their annotations and defaults)
    and its options, then given the rest of its attributes (methods, class variables).

    ``__post_init__`` is taken when the class is made, before its attributes are set, but
    may refer to the class itself (``super()``, its name), which is not made yet when the
    class's making is unpickled: the class is made with :func:`_post_init`, which calls the
    ``__post_init__`` the class has by then."""
    own: dict[str, Any] = dict(inspect.get_annotations(cls))
    fields = cls.__struct_fields__
    defaults = cls.__struct_defaults__
    first_default = len(fields) - len(defaults)
    namespace: dict[str, Any] = {
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__annotations__": _resolved(cls, own),
        "__doc__": cls.__dict__.get("__doc__"),
    }
    own_fields = [name for name in own if name in fields]
    factories: dict[str, Any] = {}  # msgspec.field() cannot be pickled: made where received
    for name in own_fields:
        at = fields.index(name)
        if at >= first_default:
            default = defaults[at - first_default]
            factory = getattr(default, "factory", None)
            if type(default).__name__ == "Factory" and factory is not None:
                factories[name] = factory
            else:
                namespace[name] = default
    if "__post_init__" in cls.__dict__:
        namespace["__post_init__"] = _post_init
    config = cls.__struct_config__
    options = {name: getattr(config, name) for name in _STRUCT_OPTIONS if hasattr(config, name)}
    if options.get("tag") is None:
        options["tag"] = False  # untagged, whatever a base says
    renamed = {
        name: wire
        for name, wire in zip(fields, cls.__struct_encode_fields__, strict=True)
        if name != wire
    }
    options["rename"] = renamed or None
    options["kw_only"] = bool(own_fields) and not set(own_fields) & set(cls.__match_args__)
    skipped = {"__module__", "__qualname__", "__annotations__", "__doc__", "__slots__"}
    skipped |= {"__dict__", "__weakref__", *own_fields, *_CACHES}
    attributes = {
        name: value
        for name, value in cls.__dict__.items()
        if name not in skipped and value is not _reduce_by_key
    }
    making = (type(cls), cls.__name__, cls.__bases__, options, namespace, factories)
    state: tuple[Any, ...] = (_set_attributes, (attributes, {}))
    return (_made, (_key_of(cls), _struct, making), state, None, None, _filled)


def _struct(
    meta: type,
    name: str,
    bases: tuple[type, ...],
    options: dict[str, Any],
    namespace: dict[str, Any],
    factories: dict[str, Any],
) -> type:
    """A Struct class made as :func:`_struct_reduced` describes it."""
    made = dict(namespace)
    made.update((field, msgspec.field(default_factory=f)) for field, f in factories.items())
    return types.new_class(name, bases, {"metaclass": meta, **options}, lambda ns: ns.update(made))


def _set_attributes(cls: type, state: tuple[dict[str, Any], dict[str, Any]]) -> None:
    for name, value in state[0].items():
        setattr(cls, name, value)


def _post_init(self: Any) -> None:
    """The ``__post_init__`` a Struct received by value is made with (see
    :func:`_struct_reduced`): the one its class was given afterwards."""
    type(self).__post_init__(self)


# --- the classes sent by value, by key -----------------------------------------------------------

_LOCK = threading.RLock()
_CLASSES: weakref.WeakValueDictionary[str, type] = weakref.WeakValueDictionary()
_KEYS: weakref.WeakKeyDictionary[type, str] = weakref.WeakKeyDictionary()
_FRESH: weakref.WeakSet[type] = weakref.WeakSet()
_REFERENCES: weakref.WeakKeyDictionary[type, _ClassReference] = weakref.WeakKeyDictionary()


def _key_of(cls: type) -> str:
    """The key a class sent by value travels with: made for it the first time it is sent
    from the process that defined it, kept by every copy of it."""
    with _LOCK:
        key = _KEYS.get(cls)
        if key is None:
            key = uuid.uuid4().hex
            _KEYS[cls] = key
            _CLASSES[key] = cls
        return key


def _made(key: str, make: Callable[..., type], arguments: tuple[Any, ...]) -> type:
    """The class of ``key``: the one this process has (its own, or a copy made before), else
    a copy made now, filled by :func:`_filled` once unpickled."""
    with _LOCK:
        cls = _CLASSES.get(key)
        if cls is None:
            cls = make(*arguments)
            _CLASSES[key] = cls
            _KEYS[cls] = key
            _FRESH.add(cls)
        return cls


def _filled(cls: type, state: tuple[Callable[[type, Any], None], Any]) -> None:
    """A copy made by :func:`_made` given its attributes; a class this process had is left
    as it is (setting them again would replace its methods with copies)."""
    with _LOCK:
        if cls not in _FRESH:
            return
        _FRESH.discard(cls)
        setter, attributes = state
        setter(cls, attributes)
        _send_by_key(cls)


def _send_by_key(cls: type) -> None:
    """Instances of ``cls``, a class sent by value (its own or a copy), sent with their class
    by key from now on (:func:`_reduce_by_key`), whichever pickler sends them.

    An engine moves records with its own pickler (Dask's process scheduler moves every
    task's input through the process that made the graph, and Dask's workers send results
    to each other and back): that pickler would send their class by value cloudpickle's
    way, with what msgspec caches on it (which cannot be pickled) and, for a Struct,
    without its fields. A class that reduces its instances itself is left as it is."""
    if "__reduce_ex__" not in cls.__dict__:
        setattr(cls, "__reduce_ex__", _reduce_by_key)  # noqa: B010 - a dunder


def _reduce_by_key(self: Any, protocol: int) -> Any:
    """An instance of a class sent by value, reduced as its class reduces it, the class
    replaced by a reference that finds it by key (:class:`_ClassReference`)."""
    cls = type(self)
    reduced = _usual_reduce(self, protocol)
    if isinstance(reduced, str) or cls not in _KEYS:
        return reduced  # a subclass made here, never sent
    make, arguments, *rest = reduced
    reference = _reference(cls)
    if make is cls:
        make = reference
    elif arguments and arguments[0] is cls:
        # pickle checks that copyreg.__newobj__'s first argument is a class: the same call,
        # by a function of this module
        make = _NEW.get(make, make)
        arguments = (reference, *arguments[1:])
    return (make, arguments, *rest)


def _usual_reduce(obj: Any, protocol: int) -> Any:
    """``obj`` reduced as its class would reduce it: by the first ``__reduce_ex__`` up its
    bases that is not :func:`_reduce_by_key` (a copy's bases may be copies too)."""
    usual = next(
        own
        for own in (c.__dict__.get("__reduce_ex__") for c in type(obj).__mro__)
        if own is not None and own is not _reduce_by_key
    )
    return usual(obj, protocol)


def _new(cls: Any, *arguments: Any) -> Any:
    cls = cls.cls if isinstance(cls, _ClassReference) else cls  # copy.copy() does not unpickle
    return cls.__new__(cls, *arguments)


def _new_ex(cls: Any, arguments: tuple[Any, ...], keywords: dict[str, Any]) -> Any:
    cls = cls.cls if isinstance(cls, _ClassReference) else cls
    return cls.__new__(cls, *arguments, **keywords)


_NEW: dict[Any, Any] = {
    getattr(copyreg, "__newobj__"): _new,  # noqa: B009 - not in copyreg's stubs
    getattr(copyreg, "__newobj_ex__"): _new_ex,  # noqa: B009
}


class _ClassReference:
    """A class sent by value, as its instances refer to it: unpickled, the class of its key
    where the process has one (the process that defined it has its own), else made from the
    class by value (pickled once per class, and once per stream)."""

    __slots__ = ("__weakref__", "_payload", "cls")

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self._payload: bytes | None = None

    def __call__(self, *arguments: Any, **keywords: Any) -> Any:
        # What makes an instance must be callable (pickle checks it), and copy.copy() calls
        # it as it is, without pickling it.
        return self.cls(*arguments, **keywords)

    def __reduce__(self) -> tuple[Any, ...]:
        if self._payload is None:
            pickler = _cloud_pickler()
            assert pickler is not None  # the class was sent by value by it
            self._payload = _pickled(pickler, self.cls, type_label(self.cls))
        return (_class_of, (_KEYS[self.cls], self._payload))


def _reference(cls: type) -> _ClassReference:
    with _LOCK:
        reference = _REFERENCES.get(cls)
        if reference is None:
            reference = _REFERENCES[cls] = _ClassReference(cls)
        return reference


def _class_of(key: str, payload: bytes) -> type:
    """The class of ``key`` where this process has one, else made from ``payload``."""
    with _LOCK:
        cls = _CLASSES.get(key)
        if cls is not None:
            return cls
        made: type = pickle.loads(payload)
        return made


# --- receiving ---------------------------------------------------------------------------------


def _received(payload: bytes, label: str) -> Any:
    with _LOCK:
        try:
            return _loaded(payload)
        except (AttributeError, ImportError, pickle.UnpicklingError, TypeError) as exc:
            raise UnshippableType(
                f"the record type {label} cannot be made in this process "
                f"({_first_line(exc)}): define what it needs in a module this process can import"
            ) from exc


_LOADED_MOST = 16
_LOADED: dict[bytes, Any] = {}


def _loaded(payload: bytes) -> Any:
    """``payload`` unpickled, once per process for the last few payloads: every task of a
    read receives the same bytes."""
    try:
        return _LOADED[payload]
    except KeyError:
        pass
    value = pickle.loads(payload)
    _LOADED[payload] = value
    while len(_LOADED) > _LOADED_MOST:
        del _LOADED[next(iter(_LOADED))]
    return value
