"""A saved ``torch.export`` program (``.pt2``) read so that nothing in the file runs.

A ``.pt2`` is the zip archive ``torch.export.save`` writes: under one top folder, ``archive_format`` (``pt2``),
``archive_version``, the program of each model as JSON (``models/NAME.json``), its weights and constants as raw
tensor bytes described by JSON configs (``data/weights/NAME_weights_config.json``,
``data/constants/NAME_constants_config.json``) and its example inputs as a ``torch.save`` pickle
(``data/sample_inputs/NAME.pt``). torch's own loader (``torch.export.load``; read in torch 2.13's
``torch/export/pt2_archive/_package.py``, ``torch/_export/serde/serialize.py`` and ``torch/export/_unlift.py``)
runs code that the file carries in several places:

* the example inputs, and the legacy one-file weights and constants (``data/weights/NAME.pt``), are unpickled
  with ``weights_only=True`` first and, when that fails, again with ``weights_only=False`` (any pickle);
* weights and tensor constants marked ``use_pickle`` are unpickled with ``weights_only=False``; constants named
  ``custom_obj_*`` (TorchScript objects) and ``opaque_obj_*`` (plain ``pickle.loads``) are unpickled as they are;
* every symbolic-shape expression of the program (``expr_str``) is parsed with ``sympy.sympify``, which evaluates
  it as Python;
* the program's input guards (``guards_code``) are Python source that torch compiles with ``exec`` when the
  program is made a module;
* compiled AOTInductor members (``data/aotinductor/``) are shared libraries that torch loads;
* an archive torch cannot read in the current format is read again in the format of torch 2.7, whose state is
  pickled.

:func:`read_pt2` reads the archive with Python's ``zipfile`` before torch sees it and refuses, in one line, an
archive that is not a zip, is damaged, holds more than :data:`PT2_MAX_MEMBERS` members or unpacks to more than
:data:`PT2_MAX_UNPACKED_BYTES`, is not in the ``pt2`` format, holds compiled code or pickled objects, or a pickle
that ``torch.load(weights_only=True)`` (torch's restricted unpickler: tensors, containers and numbers only)
refuses, or a shape expression that is more than numbers, symbols and sympy's arithmetic, comparisons and the
functions torch writes (:func:`check_sym_expr`). The guards are dropped unread (hetsim never calls the program: it
reads its graph). What torch then loads is a fresh archive holding exactly the members checked here (so a zip
that reads one way in Python and another way in torch's reader cannot slip a member past the checks), and it is
loaded with torch's ``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` set, so that no ``torch.load`` inside torch's loader can
fall back to unpickling anything.
"""

from __future__ import annotations

import builtins
import io
import json
import keyword
import re
import tokenize
import zipfile
import zlib
from pathlib import Path

from hetsim.errors import WorkloadError
from hetsim.input_files import MAX_MODEL_BYTES, read_input_bytes

#: the most members a ``.pt2`` may hold (a few per weight tensor; ResNet-50 has about 330)
PT2_MAX_MEMBERS = 100_000
#: the most bytes its members may unpack to together (the zip-bomb bound; as a model file's cap)
PT2_MAX_UNPACKED_BYTES = MAX_MODEL_BYTES
#: the longest symbolic-shape expression read (characters)
SYM_EXPR_MAX_CHARS = 10_000

WHAT = "PyTorch program"
_SAVE = "a .pt2 is the zip archive torch.export.save writes"

# the archive's layout (torch/export/pt2_archive/constants.py, torch 2.13)
_FORMAT, _MODELS, _SAMPLE_INPUTS = "archive_format", "models/", "data/sample_inputs/"
_WEIGHTS, _CONSTANTS, _AOTI = "data/weights/", "data/constants/", "data/aotinductor/"
_LEGACY = ("serialized_exported_program.json", "serialized_state_dict.pt", "serialized_state_dict.json")

#: the functions a shape expression may call: sympy's classes as ``sympy.srepr`` writes them, and the functions
#: torch's deserializer provides (``torch.utils._sympy.functions``)
SYM_FUNCTIONS = frozenset({
    "Symbol", "Integer", "Rational", "Float", "Add", "Mul", "Pow", "Mod", "Max", "Min", "Abs", "floor", "ceiling",
    "sign", "sqrt", "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "Equality", "Unequality", "StrictLessThan", "LessThan",
    "StrictGreaterThan", "GreaterThan", "And", "Or", "Not", "Xor", "ITE", "Piecewise", "ExprCondPair", "Tuple",
    "BooleanTrue", "BooleanFalse",
    "FloorDiv", "ModularIndexing", "Where", "PythonMod", "CleanDiv", "CeilToInt", "FloorToInt", "CeilDiv", "LShift",
    "RShift", "PowByNatural", "FloatPow", "FloatTrueDiv", "IntTrueDiv", "IsNonOverlappingAndDenseIndicator",
    "TruncToFloat", "TruncToInt", "RoundToInt", "RoundDecimal", "ToFloat", "Identity",
})
#: names a shape expression may hold as values: sympy's constants and Python's
_SYM_CONSTANTS = frozenset({"True", "False", "None", "oo", "zoo", "nan", "true", "false", "pi", "E"})
_SYM_OPS = frozenset({"+", "-", "*", "/", "//", "%", "**", "(", ")", ",", "=", "==", "!=", "<", "<=", ">", ">=",
                      "&", "|", "~", "^"})
_SYMBOL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*[0-9_]*\Z")  # s77, u0, zuf3, ...: torch's symbol names
_NUMBER_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\Z")


def read_pt2(path: Path) -> bytes:
    """The ``.pt2`` file ``path`` checked (module docstring) and packed afresh, ready for ``torch.export.load``.

    Returns:
        the bytes of a zip archive (stored, not compressed) holding the checked members under the archive's top
        folder, with each program's ``guards_code`` emptied.

    Raises:
        WorkloadError: one line naming the file and the reason: not a regular file, empty, too large, not a zip
            (an ONNX model by its first byte), damaged, too many members or too large unpacked, not the ``pt2``
            format (a ``torch.save`` checkpoint, the torch 2.7 format), compiled code, pickled objects, a pickle
            torch's restricted unpickler refuses, a program that is not JSON, a shape expression that is not one.
    """
    data = read_input_bytes(path, WHAT, MAX_MODEL_BYTES, WorkloadError)
    top, members = _unpack(path, data)
    _check_format(path, members)
    for name in list(members):
        if name.startswith(_MODELS) and name.endswith(".json"):
            members[name] = _check_program(path, name, members[name])
            _check_pickles(path, members, name[len(_MODELS):-len(".json")])
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, blob in members.items():
            z.writestr(top + name, blob)
    return out.getvalue()


def _refuse(path: Path, why: str) -> WorkloadError:
    return WorkloadError(f"{path} is not a {WHAT} hetsim can load safely: {why}")


def _unpack(path: Path, data: bytes) -> tuple[str, dict[str, bytes]]:
    """The archive's top folder and its members (name below the top folder -> bytes), checked for size."""
    if not data:
        raise WorkloadError(f"{path} is empty, not a saved torch.export program ({_SAVE})")
    if not data.startswith(b"PK"):
        hint = " (it looks like an ONNX model: name it .onnx)" if data[:1] == b"\x08" else ""
        raise WorkloadError(f"{path} is not a saved torch.export program: not a zip archive{hint} ({_SAVE})")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as err:
        raise WorkloadError(f"{path} is not a saved torch.export program: a damaged zip archive ({err})") from None
    if not infos:
        raise WorkloadError(f"{path} is an empty zip archive, not a saved torch.export program ({_SAVE})")
    if len(infos) > PT2_MAX_MEMBERS:
        raise _refuse(path, f"{len(infos):,} members, more than the {PT2_MAX_MEMBERS:,} hetsim reads")
    unpacked = sum(i.file_size for i in infos)
    if unpacked > PT2_MAX_UNPACKED_BYTES:
        raise _refuse(path, f"its members unpack to {unpacked:,} bytes, more than the {PT2_MAX_UNPACKED_BYTES:,} "
                            "hetsim reads (a zip bomb?)")
    if any(i.filename in _LEGACY for i in infos):
        raise _refuse(path, "it is in the format of torch 2.7 and older, whose state is pickled; save it again "
                            "with torch.export.save of torch 2.8 or newer")
    top = infos[0].filename.split("/", 1)[0] + "/"
    members: dict[str, bytes] = {}
    for info in infos:
        if not info.filename.startswith(top) or info.filename == top:
            raise _refuse(path, f"member {info.filename!r} is not under the archive's top folder {top!r}")
        name = info.filename[len(top):]
        if name in members:
            raise _refuse(path, f"member {info.filename!r} appears twice")
        if info.flag_bits & 0x1:
            raise _refuse(path, f"member {info.filename!r} is encrypted")
        try:
            members[name] = zf.read(info)
        except (zipfile.BadZipFile, zlib.error, NotImplementedError, OSError, EOFError, ValueError) as err:
            raise WorkloadError(f"{path} is not a saved torch.export program: a damaged zip archive "
                                f"(member {info.filename!r}: {err})") from None
    return top, members


def _check_format(path: Path, members: dict[str, bytes]) -> None:
    fmt = members.get(_FORMAT)
    if fmt == b"pt2":
        aoti = next((n for n in members if n.startswith(_AOTI)), None)
        if aoti is not None:
            raise _refuse(path, f"it holds compiled AOTInductor code ({aoti}), which would run as native code; "
                                "save the program without it (torch.export.save)")
        models = [n[len(_MODELS):-len(".json")] for n in members if n.startswith(_MODELS) and n.endswith(".json")]
        if not models:
            raise _refuse(path, "it holds no program (models/*.json)")
        for need in (".data/version", *(f"{_SAMPLE_INPUTS}{m}.pt" for m in models)):
            if need not in members:
                raise WorkloadError(f"{path} is not a saved torch.export program: it has no {need} "
                                    "(torch.export.save writes it)")
        return
    if "data.pkl" in members:
        raise WorkloadError(f"{path} is a torch.save file (e.g. a state dict or a pickled module), not a program "
                            "saved by torch.export.save: hetsim needs the graph (torch.export.export, then "
                            "torch.export.save), and does not unpickle torch.save files")
    raise WorkloadError(f"{path} is not a saved torch.export program: a zip archive without archive_format 'pt2' "
                        f"({_SAVE})")


def _check_program(path: Path, name: str, blob: bytes) -> bytes:
    """The program JSON with its guards emptied, after every shape expression in it is checked."""
    try:
        doc = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _refuse(path, f"{name} is not JSON") from None
    if not isinstance(doc, dict):
        raise _refuse(path, f"{name} is not a JSON object")
    stack: list = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            expr = node.get("expr_str")
            if expr is not None:
                why = check_sym_expr(expr)
                if why:
                    raise _refuse(path, f"{name}: shape expression {str(expr)[:80]!r}: {why}")
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    if doc.get("guards_code"):
        doc["guards_code"] = []  # Python source torch would exec; hetsim never calls the program
        return json.dumps(doc).encode()
    return blob


def check_sym_expr(expr) -> str:
    """Why ``expr`` is not a shape expression safe to hand to ``sympy.sympify``, or ``""`` when it is.

    Safe: numbers, torch's symbol names (``s77``), names quoted as a ``Symbol``'s name or numbers quoted as a
    ``Float``'s value, keyword arguments (``integer=True``), the operators of :data:`_SYM_OPS`, and calls of the
    functions in :data:`SYM_FUNCTIONS` only. Nothing else: no attribute access, indexing, other strings or
    calls, so that sympy's evaluation of the text can do nothing but build an expression.
    """
    if not isinstance(expr, str):
        return "not a string"
    if len(expr) > SYM_EXPR_MAX_CHARS:
        return f"longer than {SYM_EXPR_MAX_CHARS:,} characters"
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(expr).readline)
                  if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT,
                                    tokenize.DEDENT)]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return "not an expression"
    prev = None
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1].string if i + 1 < len(tokens) else ""
        why = _token_problem(tok, prev, nxt)
        if why:
            return why
        prev = tok
    return ""


def _token_problem(tok: tokenize.TokenInfo, prev: tokenize.TokenInfo | None, nxt: str) -> str:
    text = tok.string
    if tok.type == tokenize.NUMBER:
        return ""
    if tok.type == tokenize.STRING:
        inner = text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else None
        if inner is None or not (_SYMBOL_NAME.match(inner) or _NUMBER_TEXT.match(inner)) or "__" in inner:
            return f"the string {text[:40]} is neither a symbol's name nor a number"
        return ""
    if tok.type == tokenize.NAME:
        if "__" in text or text.startswith("_"):
            return f"the name {text!r}"
        if nxt == "(":
            return "" if text in SYM_FUNCTIONS else f"a call of {text!r}, not one of sympy's or torch's shape functions"
        if nxt == "=" or text in _SYM_CONSTANTS:
            return ""
        if keyword.iskeyword(text) or hasattr(builtins, text) or not _SYMBOL_NAME.match(text):
            return f"the name {text!r}"
        return ""
    if tok.type == tokenize.OP:
        if text not in _SYM_OPS:
            return f"the operator {text!r}"
        if text == "(" and prev is not None and (prev.type in (tokenize.NUMBER, tokenize.STRING)
                                                 or prev.string == ")"):
            return "a call of something that is not a named function"
        return ""
    return f"the token {text[:40]!r}"


def _check_pickles(path: Path, members: dict[str, bytes], model: str) -> None:
    """Every member torch would unpickle for ``model`` must load with ``torch.load(weights_only=True)``; pickled
    objects (``custom_obj_*``, ``opaque_obj_*`` constants) are refused."""
    pickles = [f"{_SAMPLE_INPUTS}{model}.pt", f"{_WEIGHTS}{model}.pt", f"{_CONSTANTS}{model}.pt"]
    for folder, config in ((_WEIGHTS, f"{_WEIGHTS}{model}_weights_config.json"),
                           (_CONSTANTS, f"{_CONSTANTS}{model}_constants_config.json")):
        for entry in _config_entries(path, members, config):
            file = str(entry.get("path_name", ""))
            if file.startswith(("custom_obj_", "opaque_obj_")):
                raise _refuse(path, f"constant {folder}{file} is a pickled Python object; hetsim does not unpickle "
                                    "objects (unpickling runs code from the file)")
            if entry.get("use_pickle"):
                pickles.append(folder + file)
    for name in pickles:
        if name in members:
            _check_weights_only(path, name, members[name])


def _config_entries(path: Path, members: dict[str, bytes], config: str) -> list[dict]:
    if config not in members:
        return []
    try:
        entries = json.loads(members[config].decode("utf-8"))["config"]
    except (UnicodeDecodeError, ValueError, RecursionError, KeyError, TypeError):
        entries = None
    if not isinstance(entries, dict):
        raise _refuse(path, f"{config} is not a payload config (JSON with a 'config' object)")
    return [e for e in entries.values() if isinstance(e, dict)]


def _check_weights_only(path: Path, name: str, blob: bytes) -> None:
    import torch

    try:
        torch.load(io.BytesIO(blob), weights_only=True, map_location=lambda storage, _loc: storage)  # host memory
    except Exception as err:  # torch raises UnpicklingError, RuntimeError, EOFError, ... for what it refuses
        found = re.search(r"GLOBAL ([\w.]+)", str(err))
        what = f"it names {found.group(1)}" if found else type(err).__name__
        raise _refuse(path, f"{name} is not a pickle that torch.load(weights_only=True) accepts ({what}); hetsim "
                            "unpickles tensors and plain data only, since unpickling anything else runs code "
                            "from the file") from None
