# Requests that ExportTest makes of an ndarray and of a dlpack4j.Tensor alike: numpy 2.4.6 is the
# oracle for which Python exception each one raises (or which capsule it returns).
REQUESTS = [
    "()", "(None,)", "(1, 2)", "(1, bogus=2)", "(bogus=1)", "(stream=1, bogus=2)",
    "(stream=None)", "(stream=0)", "(stream=1)", "(stream=-1)", "(stream='x')", "(stream=1.5)",
    "(max_version=None)", "(max_version=(1, 3))", "(max_version=(1, 0))", "(max_version=(0, 8))",
    "(max_version=(2, 0))", "(max_version=(1,))", "(max_version=[1, 3])", "(max_version=1)",
    "(max_version=('a', 'b'))", "(max_version=(1, 3, 0))", "(max_version=(1.0, 3))", "(max_version=(-1, 0))",
    "(max_version=(2**70, 0))", "(max_version=(True, 0))", "(max_version=(1, 'x'))", "(max_version=(1, 2**70))",
    "(dl_device=None)", "(dl_device=(1, 0))", "(dl_device=(1, 1))", "(dl_device=(2, 0))", "(dl_device=(3, 0))",
    "(dl_device=[1, 0])", "(dl_device=1)", "(dl_device=(1,))", "(dl_device=('a', 0))", "(dl_device=(1, 0, 0))",
    "(dl_device=(99, 0))", "(dl_device=(-1, 0))", "(dl_device=(1, True))", "(dl_device=(True, 0))",
    "(dl_device=(1, 2**40))", "(dl_device=(2**40, 0))", "(dl_device=(1.0, 0))",
    "(copy=None)", "(copy=True)", "(copy=False)", "(copy=1)", "(copy=0)", "(copy='yes')", "(copy=[])", "(copy=[1])",
    "(max_version=(1, 3), copy=True)", "(max_version=(1, 3), copy=False, dl_device=(1, 0))",
    "(stream=1, dl_device=(2, 0))", "(stream=1, max_version=1)", "(max_version=1, dl_device=(2, 0))",
    "(max_version=1, dl_device=1)", "(stream=1, copy='x')", "(max_version=1, copy='x')", "(dl_device=(2, 0), copy='x')",
    "(copy='x', dl_device=1)", "(dl_device=(1, 0), stream=2)", "(copy=1, max_version=(0, 1))",
    "(stream=None, max_version=(1, 2), dl_device=(1, 0), copy=None)", "(**{'max_version': (1, 3)})",
]


def outcome(obj, request):
    """('ok', capsule name) or ('error', exception type name)."""
    try:
        capsule = eval("obj.__dlpack__" + request, {"obj": obj})
    except Exception as e:  # noqa: BLE001 - the type is the result
        return ("error", type(e).__name__)
    return ("ok", repr(capsule).split('"')[1])


def compare(ndarray, java):
    """The requests whose outcomes differ, with both outcomes."""
    return [(r, outcome(ndarray, r), outcome(java, r)) for r in REQUESTS
            if outcome(ndarray, r) != outcome(java, r)]
