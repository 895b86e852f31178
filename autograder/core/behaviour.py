"""Behaviour contracts: what a task's function must do besides returning the right values. Instructor-only.

A task declares in its cases module ``BEHAVIOUR = Behaviour(...)``: the rubric test its cases count in, one call
of its function (``call``), and which of the properties below hold for it. ``behaviour_cases`` turns the
declaration into scored cases of that test, run in the student's job with the others (the worker's probe fields
``trained``, ``layout``, ``state``, ``again`` and the op ``sequence``) and each checked here against the reference:

* "gradients": gradients reach every input a model would train (``trained``), equal to the reference's (the
  backward of a drawn weighted sum of the result): a ``.detach()``, ``torch.no_grad()`` or a trip through NumPy
  loses them.
* "fresh results": the result aliases no input and no earlier result: the caller adds 1 to it in place, then
  calls again with the same arguments (a result kept by ``functools.lru_cache`` and handed out twice fails).
* "global state": the call leaves torch's random stream, default dtype, grad mode and thread count as they were
  (a module's ``__init__`` may draw from the stream, not restart it).
* "any layout": the inputs named in ``layouts`` give the same answer transposed in memory (or strided, for one
  axis) and broadcast along an axis (expanded, no memory of its own): a ``.view`` that needs contiguity fails.
* "independent calls": the call and its variants (each argument in ``vary`` with other values, each tensor in
  ``trained`` and ``layouts`` redrawn) made one after another in a drawn order: a cache keyed on part of the
  arguments fails.

A broken contract is named (Verdict.mistake): it says what is wrong whatever the values, and a test that
``needs`` this one still counts. The cases carry no features: they are not part of the covering design.
"""

import inspect
import random
import types
from dataclasses import dataclass, field
from typing import Callable

import torch

from autograder.core.cases import (Case, Verdict, call_label, call_probe, device_arg, dtype_arg, raised_text,
                                   returned_value, tensor_check)
from autograder.core.compare import mismatch

PROPERTIES = ("gradients", "fresh results", "global state", "any layout", "independent calls")


@dataclass(frozen=True)
class Behaviour:
    """A task's behaviour contract. ``call(rng, generator)`` returns (args, kwargs) of one call (for a class: the
    args of __init__ and x); the other fields say which properties hold and for which inputs, by name."""

    test: str
    call: Callable
    trained: tuple = ()  # the inputs a model would train: gradients must reach each
    layouts: tuple = ()  # the tensor inputs any memory layout of which gives the same answer
    vary: dict = field(default_factory=dict)  # {argument: other values}, for the interleaved calls
    fresh: bool = True  # False where the result is a number, which nobody changes in place
    state: bool = True
    independent: bool = True
    stand_ins: tuple = ()  # ((helper, stand-in, key), ...) swapped in while the task is graded (worker.STAND_INS)
    view: str = None  # the unit's VIEWS function that makes the result one tensor
    atol: float = 1e-5
    rtol: float = 1e-5

    def cases(self, unit, task, seed):
        """The scored cases of this contract for ``task`` of ``unit`` at ``seed`` (see behaviour_cases)."""
        return behaviour_cases(unit, task, seed)

    @property
    def properties(self):
        holds = {"gradients": bool(self.trained), "fresh results": self.fresh, "global state": self.state,
                 "any layout": bool(self.layouts), "independent calls": self.independent}
        return tuple(name for name in PROPERTIES if holds[name])


def declared(unit, task):
    """The task's Behaviour, or None where it declares none."""
    return getattr(unit.cases_module(task), "BEHAVIOUR", None)


# --- the reference's side ------------------------------------------------------------------------------------

class _Reference:
    """The task's reference as the cases call it: on (args, kwargs), its result (a module's forward for a class),
    or with the unit's stand-ins in place of the helpers it calls (the second right answer, see worker.STAND_INS)."""

    def __init__(self, unit, task, behaviour):
        self.unit, self.behaviour, self.task = unit, behaviour, task
        self.name = unit.rubric.TASK_BY_NAME[task].functions[0]
        self.target = getattr(unit.reference, self.name)
        self.module = inspect.isclass(self.target)
        self.view = unit.job.VIEWS[behaviour.view] if behaviour.view else (lambda value: value)
        function = self.target.__init__ if self.module else self.target
        self.parameters = [name for name in inspect.signature(function).parameters if name != "self"]

    def functions(self):
        """The reference, and where the task has stand-ins, the reference with them in its helpers' place."""
        found = [self.target]
        if self.behaviour.stand_ins:
            scope = dict(self.target.__globals__)
            for helper, stand_in, key in self.behaviour.stand_ins:
                scope[helper] = (lambda made, key: lambda *a, **k: made(*a, **k, key=tuple(key)))(
                    self.unit.job.STAND_INS[stand_in], key)
            copy = types.FunctionType(self.target.__code__, scope, self.name, self.target.__defaults__,
                                      self.target.__closure__)
            copy.__kwdefaults__ = self.target.__kwdefaults__
            found.append(copy)
        return found

    def run(self, function, args, kwargs, weight=None, trained=(), grad_out=None):
        """The result of one call, and the gradients reaching ``trained`` (names) from sum(result * grad_out)."""
        args, kwargs = _cloned(list(args)), _cloned(dict(kwargs))
        leaves = [_get(args, kwargs, self.where(name)) for name in trained]
        for leaf in leaves:
            leaf.requires_grad_()
        if self.module:  # args: [the args of __init__, x]
            with torch.random.fork_rng(devices=[]):
                module = function(*args[0])
            with torch.no_grad():
                module.weight.copy_(weight)
            args, kwargs, function = [args[1]], {}, module
        result = self.view(function(*args, **kwargs))
        grads = []
        if leaves:  # backward of the sum, not result.backward(grad_out): the same gradients, and torch's check of
            # an explicit grad_out's shape imports sympy (0.4 s at every grader's start)
            (result * grad_out).sum().backward()
            grads = [leaf.grad for leaf in leaves]
        return (result.detach() if isinstance(result, torch.Tensor) else result), grads

    def where(self, name):
        """Where an argument is in a call: its position, or for a keyword its name (the worker's addresses)."""
        if self.module:  # x, or an argument of __init__ (in the call's first item)
            return 1 if name == "x" else ("init", self.parameters.index(name))
        return self.parameters.index(name) if name in self.parameters[:self._positional] else name

    def bind(self, args, kwargs):
        self._positional = len(args)
        return args, kwargs


def _own(args, kwargs):
    return _cloned(list(args)), _cloned(dict(kwargs))


def _cloned(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_cloned(item) for item in value)
    if isinstance(value, dict):
        return {key: _cloned(item) for key, item in value.items()}
    return value


def _dense(value):
    """``value`` with every tensor in it copied into memory of its own, in the default layout."""
    if isinstance(value, torch.Tensor):
        return value.contiguous().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_dense(item) for item in value)
    if isinstance(value, dict):
        return {key: _dense(item) for key, item in value.items()}
    return value


def _get(args, kwargs, where):
    return args[where] if isinstance(where, int) else kwargs[where]


def _set(args, kwargs, where, value):
    if isinstance(where, tuple):  # an argument of a module's __init__
        args[0] = tuple(value if index == where[1] else item for index, item in enumerate(args[0]))
    elif isinstance(where, int):
        args[where] = value
    else:
        kwargs[where] = value


def _wire(value):
    """A value as a probe carries it (dtypes and devices as the worker decodes them)."""
    if isinstance(value, torch.dtype):
        return dtype_arg(value)
    if isinstance(value, torch.device):
        return device_arg(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_wire(item) for item in value)
    return value


# --- the cases -----------------------------------------------------------------------------------------------

class _Call:
    """One call of a contract case: its probe, its label, and a check of a value outcome against the reference."""

    def __init__(self, reference, args, kwargs, generator, laid_out=None, **fields):
        behaviour = reference.behaviour
        self.reference = reference
        seen = laid_out or (args, kwargs)  # the values the call sees, where the probe sends them in another form
        if reference.module:
            init, x = seen[0]
            with torch.random.fork_rng(devices=[]):
                shape = reference.target(*init).weight.shape
            self.weight = torch.randn(shape, generator=generator)
            self.label = f"{reference.name}{tuple(init)!r}(x of shape {tuple(x.shape)})"
        else:
            self.weight = None
            self.label = call_label(reference.name, _wire(list(seen[0])), _wire(seen[1]))
        self.answers = [reference.run(function, *seen, weight=self.weight)[0] for function in reference.functions()]
        self.seen = seen
        self.plain = self._probe(*_dense(seen))  # the same values in the default layout, nothing else asked
        self.probe = dict(self._probe(args, kwargs), **fields)
        expected, *also = [answer if isinstance(answer, torch.Tensor) else torch.tensor(answer, dtype=torch.float64)
                           for answer in self.answers]
        self.value_check = tensor_check(self.label, expected, atol=behaviour.atol, rtol=behaviour.rtol,
                                        also_accept=also[0] if also else None,
                                        inputs=None if reference.module else tuple(reference.parameters))

    def _probe(self, args, kwargs):
        reference = self.reference
        if reference.module:
            return {"op": "module", "name": reference.name, "init": _wire(list(args[0])), "x": args[1],
                    "weight": self.weight, "grad_out": None, "seed": 0}
        substitute = [{"name": helper, "stand_in": stand_in, "key": list(key)}
                      for helper, stand_in, key in reference.behaviour.stand_ins]
        substitute = substitute[0] if len(substitute) == 1 else substitute  # one, as the cases send one
        return call_probe(reference.name, _wire(list(args)), _wire(kwargs), substitute=substitute or None,
                          view=reference.behaviour.view)

    def paired(self, judge, test):
        """A case that makes the plain call, then the contract's: ``judge`` reads the second's outcome once the
        first is right. Where the plain call is wrong (or raised), the task's value cases say so, in their own test:
        the contract passes, so that one mistake is charged once (DESIGN.md, invariant 10)."""

        def check(outcome):
            calls = (outcome or {}).get("calls") or []
            if len(calls) != 2 or not self.check(calls[0]).passed:
                return Verdict(True)
            return judge(calls[1])

        return Case(test, self.label, {"op": "sequence", "calls": [self.plain, self.probe]}, check)

    def check(self, outcome):
        """The value check, on a function's outcome or a module's forward."""
        return self.value_check(_stage(outcome))

    def declared_mistakes(self, outcome):
        """((mistake, message), ...): the declared mistakes of the task (the ``Mistake`` entries of its cases module,
        at any call through its ``check_at``) whose output at this call's inputs is the outcome's value; () where
        none is, or the task declares none."""
        check_at = getattr(self.reference.unit.cases_module(self.reference.task), "check_at", None)
        if check_at is None or self.reference.module:
            return ()
        try:
            verdict = check_at(_cloned(list(self.seen[0])), _cloned(dict(self.seen[1])))(_stage(outcome))
        except Exception:  # noqa: BLE001  (no declared mistake at a call the task's cases cannot make)
            return ()
        return () if verdict.passed else tuple(verdict.explanations())

    def matched(self, outcome):
        """Which right answer the outcome's value is (its index), or None."""
        got = returned_value(_stage(outcome))
        for index, answer in enumerate(self.answers):
            if isinstance(got, torch.Tensor) and isinstance(answer, torch.Tensor) and mismatch(
                    got, answer, atol=self.reference.behaviour.atol, rtol=self.reference.behaviour.rtol) is None:
                return index
        return None


def _stage(outcome):
    """A module probe's outcome as a call's: the failed __init__, or forward."""
    if isinstance(outcome, dict) and "init" in outcome:
        return outcome["init"] if "error" in outcome["init"] else outcome.get("forward")
    return outcome


def _broken(label, message, mistake):
    said = f"{label} {message}"
    return Verdict(False, said, mistake=mistake, explained=((mistake, said),), unnamed=said)


def _gradients_case(reference, args, kwargs, generator):
    behaviour = reference.behaviour
    trained = behaviour.trained
    probe_fields = {"x_grad": True} if reference.module else {
        "trained": [reference.where(name) for name in trained]}
    call = _Call(reference, args, kwargs, generator, **probe_fields)
    grad_out = torch.randn(call.answers[0].shape, generator=generator, dtype=torch.float64).to(call.answers[0].dtype)
    call.probe["grad_out"] = grad_out
    expected = [reference.run(function, args, kwargs, weight=call.weight, trained=trained, grad_out=grad_out)[1]
                for function in reference.functions()]

    def judge(outcome):
        verdict = call.check(outcome)
        if not verdict.passed:  # right with plain inputs, but not with inputs that require grad
            return _broken(call.label, "with inputs that require grad (as a model's do) fails:\n" + verdict.message,
                           f"no gradient reaches {' or '.join(trained)}: the inputs are read as plain numbers "
                           "(NumPy, .tolist(), .item())")
        grads = outcome.get("x_grad") if reference.module else outcome.get("grads")
        if grads is None or "error" in grads:
            error = (grads or {}).get("error")
            return _broken(call.label, "returns the right values, but backward through its result raised "
                           f"{raised_text(error) if error else 'an error'}\nA model could not train through it: "
                           "compute the result with torch operations on the inputs, all the way.",
                           "backward through the result fails")
        values = [grads["value"]] if reference.module else grads["value"]
        answers = expected[call.matched(outcome) or 0]
        for name, got, want in zip(trained, values, answers):
            got = got.get("tensor")
            if got is None:
                return _broken(call.label, f"returns the right values, but no gradient reaches {name}: the result "
                               "is cut off from autograd on the way (a .detach(), torch.no_grad(), .item(), "
                               ".tolist() or a trip through NumPy), so a model using it would never train "
                               f"{name}. Compute with torch operations on {name} itself.",
                               f"no gradient reaches {name}")
            scale = float(want.abs().max()) if want.numel() else 0.0
            wrong = mismatch(got, want, what=f"the gradient reaching {name}", atol=1e-4 * scale + 1e-6, rtol=1e-4)
            if wrong:
                return _broken(call.label, f"returns the right values, but the gradient reaching {name} is not the "
                               f"reference's: {wrong}\nSomewhere a step treats {name} as a constant (a .detach() "
                               "or .data on part of the way) or reaches it through a path autograd cannot see.",
                               f"the gradient reaching {name} is wrong")
        return verdict

    return call.paired(judge, behaviour.test)


def _fresh_case(reference, args, kwargs, generator):
    call = _Call(reference, args, kwargs, generator, again=True)

    def judge(outcome):
        verdict = call.check(outcome)
        if not verdict.passed:
            return verdict
        stage = _stage(outcome)
        if stage.get("aliased"):
            return _broken(call.label, "returns a tensor that shares memory with its input: when the caller "
                           "changed the result in place, the input changed too. Return a new tensor (x + rows, "
                           "x.clone(), x.reshape(...) of a copy), not a view of an input.",
                           "the result is a view of an input")
        again = outcome.get("again") or {}
        second = call.check(again)
        if second.passed:
            return verdict
        return _broken(call.label, "called a second time with the same arguments, after the caller had added 1 "
                       "to the first result in place, returned:\n" + second.message + "\nEach call must return "
                       "a tensor of its own: a result kept from an earlier call (functools.lru_cache, a dict of "
                       "results, a buffer) and handed out again carries whatever its last caller did to it. Keep "
                       "what you cache private and return a new tensor each time (cached.clone()).",
                       "one result handed out to every caller (a cached tensor returned again)")

    return call.paired(judge, reference.behaviour.test)


def _state_case(reference, args, kwargs, generator, rng):
    seeds = [rng.randrange(1, 2**31) for _ in range(2)]
    call = _Call(reference, args, kwargs, generator, state=True, seed=seeds[0],
                 **({"seeds": seeds} if reference.module else {}))

    def judge(outcome):
        verdict = call.check(outcome)
        changed = list(dict.fromkeys((outcome.get("state") or []) + ((_stage(outcome) or {}).get("state") or [])))
        if not changed:
            return verdict
        said = " and ".join(changed)
        return _broken(call.label, f"changed torch's global {said} and left it so. Every caller shares those: "
                       "torch.manual_seed inside a function or __init__ restarts the caller's random stream (each "
                       "run draws the same numbers again), set_default_dtype changes every tensor they make, "
                       "set_grad_enabled stops their training. Draw from a torch.Generator of your own if you "
                       "need a seed, and change no global setting (torch.no_grad() as a with-block puts grad "
                       "mode back).", f"a global setting of torch changed by the call (its {said})")

    return call.paired(judge, reference.behaviour.test)


LAYOUTS = {
    "transposed": "transposed in memory (the same values, the axes' memory order reversed, as heads split by a "
                  "transpose are)",
    "expanded": "broadcast along an axis by .expand (the same values, that axis with no memory of its own)",
}


def _layout_cases(reference, args, kwargs, generator):
    cases = []
    for kind, words in LAYOUTS.items():
        sent, seen, layout = [list(args), dict(kwargs)], [list(args), dict(kwargs)], []
        for name in reference.behaviour.layouts:
            where = reference.where(name)
            tensor = _get(args, kwargs, where)
            if kind == "transposed" and tensor.dim() >= 1:
                layout.append([where, "transposed" if tensor.dim() >= 2 else "strided"])
            elif kind == "expanded" and any(size > 1 for size in tensor.shape):
                axis = next(axis for axis, size in enumerate(tensor.shape) if size > 1)
                narrow = tensor.narrow(axis, 0, 1).clone()
                layout.append([where, ["expand", list(tensor.shape)]])
                _set(*sent, where, narrow)
                _set(*seen, where, narrow.expand(tensor.shape))
        if not layout:
            continue
        fields = {"layout": layout[0][1]} if reference.module else {"layout": layout}
        call = _Call(reference, *sent, generator, laid_out=seen, **fields)
        names = " and ".join(reference.behaviour.layouts)

        def judge(outcome, call=call, words=words, names=names):
            verdict = call.check(outcome)
            if verdict.passed:
                return verdict
            message = verdict.message
            view = "view" in message and ("stride" in message or "contiguous" in message)
            return _broken(f"With {names} {words},", f"{message}\n" + (
                "A .view needs memory laid out in the order of the shape asked for; use .reshape, which copies "
                "only where it must." if view else "The same values in another memory layout must give the same "
                "answer: read the inputs through torch operations, never through their strides or storage."),
                "the result depends on how the inputs lie in memory (a .view where .reshape is needed)")

        cases.append(call.paired(judge, reference.behaviour.test))
    return cases


def _variants(reference, args, kwargs, generator):
    """The base call and its variants: one argument at a time given another value, or a tensor redrawn."""
    behaviour = reference.behaviour
    found = [(args, kwargs)]

    def changed(name, value):
        new_args, new_kwargs = list(args), dict(kwargs)
        _set(new_args, new_kwargs, reference.where(name), value)
        return new_args, new_kwargs

    for name, values in behaviour.vary.items():
        found += [changed(name, value) for value in values]
    for name in dict.fromkeys(behaviour.trained + behaviour.layouts):
        tensor = _get(args, kwargs, reference.where(name))
        fresh = (draw(generator, *tensor.shape, dtype=tensor.dtype) if tensor.is_floating_point()
                 else torch.randint(0, 100, tensor.shape, generator=generator, dtype=tensor.dtype))
        found.append(changed(name, fresh))
    return found


def _independent_case(reference, args, kwargs, generator, rng):
    calls = [_Call(reference, *variant, generator) for variant in _variants(reference, args, kwargs, generator)]
    # Each call once, in a drawn order: of two calls a partial key confuses, the later gets the earlier's result.
    order = list(range(len(calls)))
    rng.shuffle(order)
    probe = {"op": "sequence", "calls": [calls[index].plain for index in order]}
    label = f"{len(order)} calls one after another"

    def check(outcome):
        outcomes = (outcome or {}).get("calls") or []
        if len(outcomes) != len(order):
            return Verdict(True)  # it did not run: the task's other cases say why
        verdicts = [calls[index].check(got) for index, got in zip(order, outcomes)]
        for step, (index, verdict) in enumerate(zip(order, verdicts)):
            if verdict.passed:
                continue
            # Right at one place of the sequence and wrong at another, or wrong with an earlier call's answer.
            alone = any(other.passed for other_index, other in zip(order, verdicts) if other_index == index)
            got = _stage(outcomes[step]) or {}
            stale = [order[earlier] for earlier in range(step) if order[earlier] != index and "value" in got
                     and calls[order[earlier]].matched(got) is not None]
            if not (alone or stale):
                continue  # wrong wherever it is made: a mistake of value, which the task's value cases show
            shown = "\n".join(f"  {number + 1}. {calls[which].label}" for number, which in enumerate(order[:step + 1]))
            earlier = f" That is the right result of call {order.index(stale[0]) + 1}." if stale else (
                " The same call gives the right result elsewhere in the sequence.")
            broken = _broken(f"Called one after another:\n{shown}\nthe last", "returned:\n" + verdict.message
                             + earlier + "\nA result made for an earlier call was handed to this one: a cache whose "
                             "key leaves out an argument the result depends on (all of them count, and a tensor's "
                             "values, not only its shape). Key it on every such argument, or keep none.",
                             "a result cached under a key that leaves out some argument")
            # An earlier call's right answer can also be what a declared mistake gives here (T5's buckets not halved
            # at num_buckets=16 are the halved ones of num_buckets=32; a scale ignored gives the call without it):
            # it explains the case too, so where the task's value cases charged that mistake already, this case
            # is that mistake, charged once, whichever order the seed drew (autograder/core/grade.py).
            also = calls[index].declared_mistakes(outcomes[step]) if stale and not alone else ()
            if also:
                broken = Verdict(False, broken.message, mistake=broken.mistake, explained=broken.explained + also,
                                 unnamed=broken.unnamed)
            return broken
        return Verdict(True)

    return Case(reference.behaviour.test, label, probe, check)


def behaviour_cases(unit, task, seed):
    """The scored cases of the task's behaviour contract, in a fixed order; [] where it declares none. Drawn from
    streams of their own, so that the task's other cases stay as they were."""
    behaviour = declared(unit, task)
    if behaviour is None:
        return []
    rng = random.Random(f"{seed}:{task}:behaviour")
    generator = torch.Generator().manual_seed(rng.randrange(2**31))
    reference = _Reference(unit, task, behaviour)
    args, kwargs = behaviour.call(rng, generator)
    args, kwargs = reference.bind(list(args), dict(kwargs))
    # Each case's inputs are its own: a call that changes its input in place (or returns it, which the fresh-results
    # case then changes) must not reach another case's inputs through a shared tensor in the job.
    made = {"gradients": lambda: [_gradients_case(reference, *_own(args, kwargs), generator)],
            "fresh results": lambda: [_fresh_case(reference, *_own(args, kwargs), generator)],
            "global state": lambda: [_state_case(reference, *_own(args, kwargs), generator, rng)],
            "any layout": lambda: _layout_cases(reference, *_own(args, kwargs), generator),
            "independent calls": lambda: [_independent_case(reference, *_own(args, kwargs), generator, rng)]}
    cases = []
    for name in behaviour.properties:
        for case in made[name]():
            case.features, case.sizes = {}, {}
            case.contract = name  # for tests and tools: which property the case checks
            cases.append(case)
    return cases


def draw(generator, *shape, dtype=torch.float32):
    """Standard normal values of ``shape`` (for a declaration's call), drawn in float64 and rounded to ``dtype``."""
    return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)
