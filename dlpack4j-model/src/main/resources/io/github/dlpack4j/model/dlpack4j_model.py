"""The Python side of dlpack4j-model: loading a model, and calling it by the module's convention.

Runs once per interpreter as the module ``dlpack4j_model`` (never in ``__main__``)."""

import importlib
import linecache
import sys
import threading
import types
from collections.abc import Callable, Iterator


def load_source(name, source, function, args):
    filename = f"<model {name}>"
    # Tracebacks of the model's code show its lines.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(f"dlpack4j_model_{name}")
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)
    if not callable(getattr(module, function, None)):
        raise NameError(f"model {name}: its source defines no function {function}")
    return getattr(module, function)(*args)


def load_factory(module, function, args):
    return getattr(importlib.import_module(module), function)(*args)


def load_torchscript(path):
    import torch

    model = torch.jit.load(path, map_location="cpu")
    model.eval()
    return model


def load_exported(path):
    """The program's module, and the names of its inputs whose dim 0 is static (they cannot batch)."""
    import torch

    program = torch.export.load(path)
    user_inputs = set(program.graph_signature.user_inputs)
    static = []
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name in user_inputs:
            value = node.meta.get("val")
            if value is not None and value.dim() > 0 and not isinstance(value.shape[0], torch.SymInt):
                static.append(f"{node.name} (dim 0 is {value.shape[0]})")
    return program.module(), static


_END = object()
# The types of a stream item's values that Java converts with the item in one pass (exact types: a
# subclass, which could carry ``__dlpack__``, goes the one-by-one way).
_PLAIN = frozenset((str, int, float, bool, type(None), dict, list, tuple))


class _Objects:
    """A stream item with a value of another type than ``_PLAIN``'s (a tensor, say): ``(names, values)``
    by index, for Java to convert one value at a time. Not a tuple, so that Java tells it apart."""

    __slots__ = ("parts",)

    def __init__(self, names: list, values: list) -> None:
        self.parts = (names, values)

    def __getitem__(self, i: int) -> list:
        return self.parts[i]


def _is_stream(result):
    """Whether a model's result is a stream of items: a generator or another iterator (not a tensor)."""
    return hasattr(result, "__next__") and not hasattr(result, "__dlpack__")


class Runner:
    """Calls the model on DLPack objects and returns its outputs.

    ``outputs`` is the declared output names, or None: then a single result is ``output``, a
    tuple's items ``output0``, ``output1``, ..., and a dict keeps its keys, and a call returns
    (names, values). With outputs declared a call returns the values in their order, and with one
    declared output that output alone (Java knows the names). ``list_output`` says that the one
    declared output is text or values, itself a list (one item a row): the model's result is then
    that list, or a dict holding it by name. Text inputs come as lists of str and are not converted."""

    def __init__(self, name, model, torch_inputs, outputs, list_output=False, text_outputs=None):
        self.name = name
        self.model = model
        self.outputs = outputs
        self.list_output = bool(list_output)
        # The declared text outputs: a stream's item that is a lone str is the first of them.
        self.text_outputs = list(text_outputs or [])
        # The model's framework is torch when loading it imported torch.
        self.torch = sys.modules.get("torch")
        self.convert = self.torch.from_dlpack if torch_inputs else None
        # torch keeps its intra-op thread count per OS thread (OpenMP's setting): a thread that never
        # set it starts, at its first parallel operator, a team of as many threads as cores, whose
        # spinning takes the cores from every other thread. Each thread that calls the model gets
        # the count of the thread that loaded it.
        self.threads = self.torch.get_num_threads() if self.torch is not None else 0
        self.local = threading.local()
        # torch.inference_mode() is a Python context manager around torch._C._InferenceMode; entered
        # for every call, the Python layer costs about a microsecond more than the C++ guard itself.
        if self.torch is not None:
            self.inference_mode = getattr(self.torch._C, "_InferenceMode", None)
            self.inference_mode_args = (True,)
            if self.inference_mode is None:
                self.inference_mode = self.torch.inference_mode
                self.inference_mode_args = ()

    def entry(self) -> Callable[..., object]:
        """What Java calls: this Runner, or for a torch model with one declared output whose inputs
        need no conversion here, a plain function of the same convention (cheaper to call)."""
        if self.torch is not None and self.convert is None and self.outputs is not None and len(self.outputs) == 1:
            return self.one_output()
        return self

    def one_output(self) -> Callable[..., object]:
        """The call of a torch model with one declared output and inputs that need no conversion: the
        same convention as ``__call__``, in a plain function (cheaper to call than an instance), the
        thread's torch settings made once by Java (``prepare_thread``) instead of a thread-local look-up."""
        model = self.model
        guard = self.inference_mode
        guard_args = self.inference_mode_args
        named = self.named
        list_output = self.list_output
        only = self.outputs[0]

        def call(*args: object) -> object:
            with guard(*guard_args):
                result = model(*args)
            if list_output:
                return result[only] if isinstance(result, dict) and only in result else result
            if isinstance(result, (dict, tuple, list)):
                return named(result)[1][0]
            return result

        return call

    def prepare_thread(self) -> None:
        """Gives the calling thread the loading thread's torch settings, once per thread (see ``threads``)."""
        if self.torch is not None and not getattr(self.local, "threads_set", False):
            self.torch.set_num_threads(self.threads)
            self.local.threads_set = True

    def __call__(self, *args):
        return self.convention(self.run_model(args))

    def warm_up(self, *args):
        """The build's first call: None for a generator model (its first item made, then closed), else
        what a call returns."""
        result = self.run_model(args)
        if _is_stream(result):
            try:
                self.step(result)
            finally:
                self.close_stream(result)
            return None
        return self.convention(result)

    def convention(self, result):
        """A call's result by the calling convention (see the class comment)."""
        if _is_stream(result):
            raise TypeError(f"model {self.name} returned a {type(result).__qualname__}: stream it (PythonModel.stream)")
        if self.outputs is None:
            return self.named(result)
        if self.list_output:
            only = self.outputs[0]
            return result[only] if isinstance(result, dict) and only in result else result
        values = self.named(result)[1]
        return values[0] if len(self.outputs) == 1 else values

    def run_model(self, args):
        """The model's own call on the inputs, under the call's torch settings."""
        if self.convert is not None:
            args = [a if isinstance(a, list) else self.convert(a) for a in args]
        if self.torch is None:
            return self.model(*args)
        if not getattr(self.local, "threads_set", False):
            self.torch.set_num_threads(self.threads)
            self.local.threads_set = True
        with self.inference_mode(*self.inference_mode_args):
            return self.model(*args)

    def start(self, *args):
        """A stream's start: the model's call, whose result is a generator or another iterable."""
        result = self.run_model(args)
        if not _is_stream(result):
            raise TypeError(
                f"model {self.name} returned a {type(result).__qualname__} to a stream, not a generator or iterator"
            )
        return result

    def step(self, items):
        """A stream's next item as (names, values), or None once the iterator ends; the model's
        code between two items runs here, under the model's torch settings."""
        if self.torch is not None and not getattr(self.local, "threads_set", False):
            self.torch.set_num_threads(self.threads)
            self.local.threads_set = True
        return self.stepper()(items)  # made per call: kept here, it would make the Runner a cycle

    def stepper(self) -> Callable[[object], object]:
        """``step`` as a plain function, which Java calls for each item of a stream (cheaper to call
        than a method), the thread's torch settings made once by Java (``prepare_thread``): an item of
        values all of ``_PLAIN``'s types as (names, values), one with another value as ``_Objects``."""
        stream_item = self.stream_item
        plain = _PLAIN
        end = _END
        guard = self.inference_mode if self.torch is not None else None
        guard_args = self.inference_mode_args if self.torch is not None else ()

        def step(items: Iterator[object]) -> object:
            if guard is None:
                item = next(items, end)
            else:
                with guard(*guard_args):
                    item = next(items, end)
            if item is end:
                return None
            names, values = stream_item(item)
            for v in values:
                if type(v) not in plain:
                    return _Objects(names, values)
            return names, values

        return step

    def stream_item(self, item):
        """An item by name: a dict keeps its keys (a declared output may be left out of an item),
        a tuple is the declared outputs in order, anything else is the one output (a lone str the
        first declared text output)."""
        names = self.outputs
        if isinstance(item, dict):
            odd = [k for k in item if type(k) is not str]
            if odd:
                kind = type(odd[0]).__qualname__
                raise TypeError(f"model {self.name} yielded a dict with a key of type {kind}: {odd[0]!r}; its keys are output names (str)")
            if names is not None:
                unknown = [k for k in item if k not in names]
                if unknown:
                    raise KeyError(f"model {self.name} yielded outputs {unknown}; its outputs are {names}")
            return list(item), list(item.values())
        if isinstance(item, tuple):
            if names is None:
                return [f"output{i}" for i in range(len(item))], list(item)
            if len(item) != len(names):
                raise ValueError(f"model {self.name} yielded {len(item)} outputs; {len(names)} are declared: {names}")
            return list(names), list(item)
        if names is None:
            return ["output"], [item]
        if len(names) == 1:
            return list(names), [item]
        if isinstance(item, str) and self.text_outputs:
            return [self.text_outputs[0]], [item]
        kind = type(item).__qualname__
        raise ValueError(f"model {self.name} yielded one {kind}; {len(names)} outputs are declared: {names} (yield a dict)")

    def close_stream(self, items):
        """Closes a stream's generator (its finally runs, GeneratorExit raised at its yield)."""
        close = getattr(items, "close", None)
        if close is not None:
            close()

    def named(self, result):
        names = self.outputs
        if isinstance(result, dict):
            if names is None:
                return list(result), tuple(result.values())
            missing = [n for n in names if n not in result]
            if missing:
                raise KeyError(f"model {self.name} returned a dict without {missing}; it has {list(result)}")
            return names, tuple(result[n] for n in names)
        if isinstance(result, (tuple, list)):
            if names is None:
                return [f"output{i}" for i in range(len(result))], tuple(result)
            if len(result) != len(names):
                raise ValueError(f"model {self.name} returned {len(result)} outputs; {len(names)} are declared: {names}")
            return names, tuple(result)
        if names is None:
            return ["output"], (result,)
        if len(names) != 1:
            raise ValueError(f"model {self.name} returned one output; {len(names)} are declared: {names}")
        return names, (result,)
