"""The data-parallel wrappers the probe knows, each a registered row (its own file: ddp.py, fsdp2.py) with one
contract, so that another wrapper (FSDP1, DeepSpeed) is one more file:

- `matches(model)`: whether the row is the model's wrapper (the model the user calls, a torch.compile wrapper taken
  off); the first row that matches is used.
- `requires(model)`: what the row reads of torch's private attributes, checked against the running torch when the
  probe is built: a name missing there is one line before any step, never a crash mid-training.
- the silence of the compute-only steps: `enter()` before a block of them, `step()` the context of each, `leave()`
  after the block; `name` and `baseline` (what the compute-only step is, in words).
- `replicated()`: the tensors every rank holds alike after a step (the replicas' check; under FSDP2 its unsharded
  parameters only: a shard is its rank's own).
- the tuner's settings: `settings()` the candidates, each a Setting (its key, the line to paste), `apply(setting)` a
  context in which the user's own calls run under that setting, the job's own put back on leaving it.
Torch only."""
import dataclasses

ROWS = []


def register(row):
    """A wrapper row, registered where it stands (a class decorator)."""
    ROWS.append(row)
    return row


def row_for(model, optimizer, called):
    """The row matching `model` (the wrapper, a compile wrapper taken off), built; None where no row does. `called` is
    what the user calls (the compile wrapper where there is one)."""
    for row in ROWS:
        if row.matches(model):
            return row(model, optimizer, called)
    return None


@dataclasses.dataclass(frozen=True)
class Setting:
    """One of the tuner's candidates: `key` names it (bucket_cap_mb=5), `paste` is the line that sets it in the
    user's own code, `options` what the row applies."""
    key: str
    paste: str
    options: tuple = ()


def missing_attributes(pairs):
    """The names among (object, name) pairs that the running torch does not have."""
    return [name for obj, name in pairs if not hasattr(obj, name)]
