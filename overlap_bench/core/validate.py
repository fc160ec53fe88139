"""Every structured input checked against its declared schema (schemas/*.schema.json, JSON Schema 2020-12) before any
of its numbers is used: types, ranges and the relations between fields. The loaders call `check` (inputs.load_json
and packs.read_json take `schema=`; the experiments' and parts' loaders, headline.load_experiment and
bench_parts.load_part, check theirs after their own checks); a violation is one UsageError line (exit 2) naming the
file, the field and the rule broken.

Beyond JSON Schema's keywords, four relations the schemas declare (ignored by other JSON Schema tools):
  ordered: [[a, b, c]]       each list's fields present are non-decreasing (ci_lo <= value <= ci_hi)
  sameLength: [[a, b/c, n]]  the arrays (or integer counts) at these paths have one length (one time per layer)
  ascending: true            an array's numbers strictly ascend
  names: {a: [list, key]}    a string field a, where present, is the `key` of one item of the array `list`
A "number" is finite here: NaN and Infinity (TOML has them; JSON's readers refuse them) are no numbers."""
import functools
import json
import math
import pathlib

FOLDER = pathlib.Path(__file__).with_name("schemas")
KINDS = ("probe", "probe_tune", "truth", "calibration", "meta", "experiment", "part", "parts")


def _finite_number(_checker, value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _at(instance, path):
    for key in path.split("/"):
        if not isinstance(instance, dict) or key not in instance:
            return None
        instance = instance[key]
    return instance


def _ordered(validator, groups, instance, _schema):
    from jsonschema import ValidationError

    if not isinstance(instance, dict):
        return
    for group in groups:
        present = [(k, instance[k]) for k in group if validator.is_type(instance.get(k), "number")]
        for (a, x), (b, y) in zip(present, present[1:]):
            if not x <= y:
                yield ValidationError(f"'{a}' <= '{b}' does not hold ({x:g} > {y:g})", validator="ordered",
                                      validator_value=group)


def _same_length(validator, groups, instance, _schema):
    from jsonschema import ValidationError

    if not isinstance(instance, dict):
        return
    for group in groups:
        sizes = []
        for path in group:
            value = _at(instance, path)
            if isinstance(value, list):
                sizes.append((path, len(value)))
            elif validator.is_type(value, "integer"):
                sizes.append((path, int(value)))
        if len({n for _, n in sizes}) > 1:
            said = ", ".join(f"{p} {n}" for p, n in sizes)
            yield ValidationError(f"{' and '.join(p for p, _ in sizes)} need one length ({said})",
                                  validator="sameLength", validator_value=group)


def _ascending(validator, ascending, instance, _schema):
    from jsonschema import ValidationError

    if ascending and isinstance(instance, list):
        numbers = [v for v in instance if validator.is_type(v, "number")]
        if any(not a < b for a, b in zip(numbers, numbers[1:])):
            yield ValidationError("must ascend", validator="ascending", validator_value=True)


def _pattern(_validator, pattern, instance, _schema):
    """JSON Schema's pattern as ECMA-262 reads it: a final `$` ends the string (Python's re lets it match before a
    final newline, so that 'nccl\\n' would pass '^[a-z]+$')."""
    import re

    from jsonschema import ValidationError

    if isinstance(instance, str):
        whole = pattern[:-1] + r"\Z" if pattern.endswith("$") and not pattern.endswith("\\$") else pattern
        if not re.search(whole, instance):
            yield ValidationError(f"does not match {pattern}", validator="pattern", validator_value=pattern)


def _names(_validator, names, instance, _schema):
    from jsonschema import ValidationError

    if not isinstance(instance, dict):
        return
    for field, (listed, key) in names.items():
        value, items = instance.get(field), instance.get(listed)
        if isinstance(value, str) and isinstance(items, list) and \
                not any(isinstance(i, dict) and i.get(key) == value for i in items):
            yield ValidationError(f"'{field}' must name the {key} of one of '{listed}'", validator="names",
                                  validator_value=[field])


@functools.lru_cache(maxsize=None)
def schema(kind):
    """The schema of `kind` (KINDS) as a dict."""
    return json.loads((FOLDER / f"{kind}.schema.json").read_text())


@functools.lru_cache(maxsize=None)
def _validator(kind):
    import jsonschema
    from jsonschema import validators

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine("number", _finite_number)
    cls = validators.extend(base, {"ordered": _ordered, "sameLength": _same_length, "ascending": _ascending,
                                   "names": _names, "pattern": _pattern}, type_checker=checker)
    names = ("common", *KINDS)
    try:  # jsonschema >= 4.18 resolves references through `referencing`
        from referencing import Registry, Resource
    except ImportError:  # Debian 12's python3-jsonschema (4.10): a resolver with the schemas in its store
        store = {f"{name}.schema.json": schema(name) for name in names}
        return cls(schema(kind), resolver=jsonschema.RefResolver(f"{kind}.schema.json", schema(kind), store=store))
    registry = Registry().with_resources(
        (f"{name}.schema.json", Resource.from_contents(schema(name))) for name in names)
    return cls(schema(kind), registry=registry)


def _field(error, key=None):
    path = ""
    for part in [*error.absolute_path, *([key] if key is not None else [])]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return f"field '{path}'" if path else "the top level"


def _shown(value, most=40):
    text = json.dumps(value, default=str)
    return text if len(text) <= most else text[:most - 3] + "..."


def rule(error):
    """The rule `error` broke, in words, without the (maybe huge) value it broke it with."""
    kind, value = error.validator, error.validator_value
    words = {"type": lambda: f"must be {' or '.join(value) if isinstance(value, list) else value}"
                             + (" (finite)" if value == "number" else ""),
             "minimum": lambda: f"must be >= {value:g}", "maximum": lambda: f"must be <= {value:g}",
             "exclusiveMinimum": lambda: f"must be > {value:g}", "exclusiveMaximum": lambda: f"must be < {value:g}",
             "const": lambda: f"must be {_shown(value)}", "enum": lambda: f"must be one of {_shown(value, 80)}",
             "minItems": lambda: f"must hold at least {value} items", "maxItems": lambda: f"holds more than {value}",
             "minLength": lambda: f"must hold at least {value} characters",
             "maxLength": lambda: f"must hold at most {value} characters",
             "pattern": lambda: f"must match {value}", "uniqueItems": lambda: "must not repeat an item",
             "oneOf": lambda: f"must match exactly one of {_shown(value, 80)}",
             "anyOf": lambda: f"must match one of {_shown(value, 80)}"}
    if kind == "required":
        return "missing (required)"
    if kind in ("additionalProperties", "unevaluatedProperties"):
        extra = error.message.split("'")[1] if error.message.count("'") >= 2 else "?"
        return f"unknown key '{extra}' (a misspelt key would be ignored)"
    if kind == "propertyNames":
        return f"a key must match {_shown(value.get('pattern', value), 60)}"
    if kind in words:
        return words[kind]()
    return error.message.splitlines()[0][:200]


def check(value, kind, where):
    """`value` against the schema of `kind`; a UsageError '<where>: field <path>: <rule>' at one violation: a field
    present with a wrong type or value before a missing one, that before a broken relation (within each, the most
    relevant as jsonschema's best_match ranks them). Returns `value`."""
    from jsonschema.exceptions import best_match

    from overlap_bench.core.ob_tool import UsageError

    try:
        errors = list(_validator(kind).iter_errors(value))
    except RecursionError:  # a value nested past the loaders' caps cannot reach here; say so if one does
        raise UsageError(f"{where}: nests too deep to check against the {kind} schema") from None
    # a field present with the wrong type or value first, then one missing, then a broken relation
    wrong = [e for e in errors if e.validator not in ("required", "ordered", "sameLength", "names", "ascending")]
    missing = [e for e in errors if e.validator == "required"]
    error = best_match(wrong or missing or errors)
    if error is not None:
        raise UsageError(f"{where}: {_where(error)}: {rule(error)} ({kind} schema)")
    return value


def _where(error):
    """The field an error names: the missing or unknown key itself, the fields of a broken relation."""
    quoted = error.message.split("'")[1] if error.message.count("'") >= 2 else None
    if error.validator == "required" and quoted is not None:
        return _field(error, quoted)
    if error.validator == "propertyNames":
        return _field(error, str(error.instance))
    if error.validator in ("ordered", "sameLength", "names"):
        inside = _field(error)
        return f"fields {', '.join(error.validator_value)}" + ("" if inside == "the top level" else f" of {inside}")
    return _field(error)


def resolved(kind):
    """The schema of `kind` with its references to other files put in place (for tools that resolve no other file's
    references: hypothesis-jsonschema's strategies in the fuzz tests)."""
    def target(ref):
        name, _, pointer = ref.partition("#")
        node = schema(name[:-len(".schema.json")])
        for key in pointer.strip("/").split("/") if pointer.strip("/") else []:
            node = node[key]
        return node

    def inline(node):
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ".schema.json#" in ref:
                return inline({**target(ref), **{k: v for k, v in node.items() if k != "$ref"}})
            return {k: inline(v) for k, v in node.items() if k not in ("$schema", "$id", "title")}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(schema(kind))
