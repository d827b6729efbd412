"""The Python side of the dlpack4j command, loaded into the embedded interpreter as `dlpack4j_cli`.

doctor: one adapter per DLPack library (how to make an array of a dtype, how to consume a DLPack
object), and probes of its __dlpack__. demo: a pass-through wrapper that records the __dlpack__
calls a consumer makes. bench and demo: the in-process timer of the Python baselines.
"""
import importlib
import importlib.util
import timeit
import warnings

# The libraries `dlpack4j doctor` looks for; --module adds others.
LIBRARIES = ('numpy', 'torch', 'jax', 'tensorflow', 'pyarrow', 'cupy')


def installed(name):
    """Whether `name` can be imported, without importing it (find_spec of a submodule imports its parent)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def capsule_name(capsule):
    """'dltensor', 'dltensor_versioned', ... from the capsule's repr: <capsule object "NAME" at 0x...>."""
    r = repr(capsule)
    return r.split('"')[1] if r.startswith('<capsule object "') else type(capsule).__name__


class Adapter:
    """A library that follows the array API: `ns.ones(n, dtype=ns.<name>)` and `ns.from_dlpack(x)`."""

    def __init__(self, module, ns=None):
        self.module = module
        self.ns = ns if ns is not None else module
        self.version = str(getattr(module, '__version__', 'unknown'))

    def dtype(self, name):
        """The library's dtype for a DLPack dtype name; LookupError if it has none."""
        dt = getattr(self.ns, name, None)
        if dt is None:
            raise LookupError('%s has no dtype %s' % (self.module.__name__, name))
        return dt

    def ones(self, name):
        return self.ns.ones(3, dtype=self.dtype(name))

    def producer(self, x):
        """What a consumer is given: the array itself, or a capsule for libraries without __dlpack__."""
        return x

    def consumer(self):
        """The library's from_dlpack, or None if it cannot import DLPack tensors."""
        return getattr(self.ns, 'from_dlpack', None)

    def readonly(self):
        """An array that the library itself will not let anyone write, or None if it has no such thing."""
        return None


class NumpyAdapter(Adapter):
    def dtype(self, name):
        np = self.module
        try:
            return np.dtype(name)
        except TypeError:
            pass
        try:  # bfloat16 and the small floats live in ml_dtypes, if it is installed
            return np.dtype(getattr(importlib.import_module('ml_dtypes'), name))
        except (ImportError, AttributeError) as e:
            raise LookupError('numpy has no dtype %s' % name) from e

    def readonly(self):
        a = self.module.ones(3, dtype='float32')
        a.flags.writeable = False
        return a


class TorchAdapter(Adapter):
    def dtype(self, name):
        dt = getattr(self.module, name, None)
        if not isinstance(dt, self.module.dtype):
            raise LookupError('torch has no dtype %s' % name)
        return dt


class JaxAdapter(Adapter):
    """jax.numpy makes the arrays; they are immutable."""

    def __init__(self, module):
        super().__init__(module, importlib.import_module('jax.numpy'))

    def readonly(self):
        return self.ns.ones(3, dtype='float32')


class PyarrowAdapter(Adapter):
    """pyarrow arrays are immutable and made from numpy's; pyarrow only produces DLPack."""

    def dtype(self, name):
        factory = getattr(self.module, 'bool_' if name == 'bool' else name, None)
        if factory is None or not callable(factory):
            raise LookupError('pyarrow has no type %s' % name)
        return factory()

    def ones(self, name):
        np = importlib.import_module('numpy')
        return self.module.array(np.ones(3, dtype=name), type=self.dtype(name))

    def consumer(self):
        return None  # pyarrow exports through DLPack but has no from_dlpack

    def readonly(self):
        return self.ones('float32')


class TensorflowAdapter(Adapter):
    """TensorFlow speaks DLPack through capsules: tf.experimental.dlpack.to_dlpack / from_dlpack."""

    def dtype(self, name):
        dt = getattr(self.module, name, None)
        if not isinstance(dt, self.module.dtypes.DType):
            raise LookupError('tensorflow has no dtype %s' % name)
        return dt

    def producer(self, x):
        return x if hasattr(x, '__dlpack__') else self.module.experimental.dlpack.to_dlpack(x)

    def consumer(self):
        dl = self.module.experimental.dlpack
        return lambda obj: dl.from_dlpack(obj.__dlpack__() if hasattr(obj, '__dlpack__') else obj)


ADAPTERS = {'numpy': NumpyAdapter, 'torch': TorchAdapter, 'jax': JaxAdapter, 'pyarrow': PyarrowAdapter,
            'tensorflow': TensorflowAdapter}


def adapter(name):
    """Imports `name` (its exceptions propagate: doctor reports them) and wraps it."""
    return ADAPTERS.get(name, Adapter)(importlib.import_module(name))


def sample(a, name):
    """Three ones of dtype `name` as the library exports them; LookupError if it cannot make that dtype
    (jax without jax_enable_x64 makes int32 when asked for int64, with a warning: that is a LookupError)."""
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        try:
            x = a.ones(name)
        except UserWarning as w:
            raise LookupError(str(w).split('.')[0]) from None
    return a.producer(x)


def keywords(a):
    """For each __dlpack__ keyword of DLPack 1.0: 'accepted', or why not."""
    x = a.producer(a.ones('float32'))
    if not hasattr(x, '__dlpack__'):
        return {k: 'n/a: exports capsules, no __dlpack__' for k in ('stream', 'max_version', 'dl_device', 'copy')}
    out = {}
    for k, v in (('stream', None), ('max_version', (1, 3)), ('dl_device', x.__dlpack_device__()), ('copy', False)):
        try:
            x.__dlpack__(**{k: v})
            out[k] = 'accepted'
        except TypeError as e:
            out[k] = 'refused: TypeError: %s' % e
        except Exception as e:
            out[k] = 'error: %s: %s' % (type(e).__name__, e)
    return out


def capsule_kinds(a):
    """The capsule name without keywords and with max_version=(1, 3) (None if refused)."""
    x = a.producer(a.ones('float32'))
    if not hasattr(x, '__dlpack__'):
        return [capsule_name(x), None]
    try:
        versioned = capsule_name(x.__dlpack__(max_version=(1, 3)))
    except TypeError:
        versioned = None
    return [capsule_name(x.__dlpack__()), versioned]


def exchange_api_attribute(a):
    """Which exchange-API attribute the array type carries: the 1.3 capsule, the 1.2 int, or None."""
    t = type(a.ones('float32'))
    for attr in ('__dlpack_c_exchange_api__', '__c_dlpack_exchange_api__'):
        if hasattr(t, attr):
            return '%s (%s)' % (attr, type(getattr(t, attr)).__name__)
    return None


def consume(a, obj, name, java_memory):
    """The library imports a Java tensor of three ones; returns a description, raises if it went wrong."""
    take = a.consumer()
    if take is None:
        raise LookupError('%s has no from_dlpack' % a.module.__name__)
    y = take(obj)
    got = str(getattr(y, 'dtype', '?')).rsplit('.', 1)[-1]
    if got != name:
        raise ValueError('arrived as %s' % got)
    values = ones_read(y)
    if values != [1.0, 1.0, 1.0]:
        raise ValueError('read %s instead of three ones' % values)
    return 'zero-copy' if address(y) == java_memory else 'copied'


def ones_read(y):
    try:
        return [complex(v).real for v in y.tolist()]
    except (TypeError, ValueError, RuntimeError):  # e.g. torch's float8 has no Python scalars
        return [float(v) for v in y.float().tolist()]


def address(y):
    """The data address of a numpy/torch/jax/cupy array, or None."""
    for get in (lambda: y.__array_interface__['data'][0], lambda: y.data_ptr(),
                lambda: y.unsafe_buffer_pointer(), lambda: y.data.ptr):
        try:
            return int(get())
        except Exception:
            pass
    return None


def write_into(a, obj):
    """The library imports `obj` and tries y[0] = 7: 'wrote', or what stopped it."""
    take = a.consumer()
    if take is None:
        raise LookupError('%s has no from_dlpack' % a.module.__name__)
    try:
        y = take(obj)
    except Exception as e:
        return 'refused to import it: %s: %s' % (type(e).__name__, e)
    try:
        y[0] = 7
        return 'wrote'
    except Exception as e:
        return 'refused the write: %s: %s' % (type(e).__name__, e)


def libpython():
    """The libpython file mapped into this process (Linux), or None."""
    try:
        with open('/proc/self/maps') as maps:
            return next((line.split()[-1] for line in maps if 'libpython' in line), None)
    except OSError:
        return None


class Traced:
    """Forwards __dlpack__ / __dlpack_device__ to `target` and records each call: the keywords the
    consumer passed and the capsule it got back."""

    def __init__(self, target):
        self.target = target
        self.calls = []

    def __dlpack_device__(self):
        return self.target.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        c = self.target.__dlpack__(**kwargs)
        self.calls.append((kwargs, capsule_name(c)))
        return c

    def route(self):
        return '; '.join('__dlpack__(%s) -> %s' % (', '.join('%s=%r' % kv for kv in kw.items()), name)
                         for kw, name in self.calls)


def time_call(fn, arg, seconds, repeat=5):
    """ns per fn(arg), one figure per round, timed by timeit in this interpreter: the count per
    round is calibrated as Java's side is (doubled until one batch takes 10 ms)."""
    t = timeit.Timer('f(a)', globals={'f': fn, 'a': arg})
    number = 1
    while True:
        took = t.timeit(number)
        if took >= 0.01:
            break
        number *= 2
    number = max(1, int(number * seconds / repeat / took))
    return [s / number * 1e9 for s in t.repeat(repeat, number)]
