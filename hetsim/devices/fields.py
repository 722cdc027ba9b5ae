"""Number types of the platform config fields: finite, not booleans, within a physical range.

Pydantic's plain ``float`` and ``int`` take ``true`` for 1, ``.inf`` and ``.nan`` (and ``1e400``, read as
infinity), and integers of any size, which then overflow or hang the models downstream. The field types here
refuse all of these with the field's path in the message:

* :data:`Real`: a finite number (an int is accepted and stored as a float), not a boolean, not a string;
* :data:`Integer`: an integer (a float with an integral value, e.g. ``100.0``, is accepted), not a boolean;
* :data:`StrictInteger`: an integer only (a count of requests, a seed, a priority of a scenario file): booleans,
  floats (``5.0`` too) and strings (``'5'``) refused;
* :data:`Flag`: ``true`` or ``false`` only; Pydantic's plain ``bool`` reads ``'yes'``, ``'off'``, ``1`` and
  ``0`` as booleans, so a quoted ``'no'`` would switch a feature on without a word;
* :data:`BitWidth`: an integer number of bits, at most :data:`MAX_BITS`, as a mapping key (``macs_per_cycle``);
  a digit string is accepted there, as JSON dumps keys as strings.

Each field adds its range with ``Field(gt=..., ge=..., le=...)``; the upper bounds below are generous
physical limits, far above any real device and far below where a product of two fields stops being finite.
"""

from __future__ import annotations

import math
import numbers
from typing import Annotated

import numpy as np
from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError

#: upper bounds of the device, link and memory fields (units in the names)
MAX_BITS = 1024  # bits per element or weight
MAX_POWER_W = 1e6  # W, per unit
MAX_CLOCK_GHZ = 1e3  # 1 THz
MAX_CLOCK_MHZ = 1e6  # 1 THz
MAX_BANDWIDTH_GB_S = 1e15  # GB/s (tests use 1e12 as "no memory bound")
MAX_TIME_NS = 1e12  # ns (1000 s)
MAX_TIME_US = 1e9  # us (1000 s)
MAX_PER_CYCLE = 1e12  # MACs, elements or bytes per cycle
MAX_CYCLES = 1e15  # cycles
MAX_KIB = 1e12  # KiB (1 EiB)
MAX_ENERGY_PJ = 1e12  # pJ per MAC or byte
MAX_COUNT = 10**9  # crossbars, array rows and columns, PEs, channels
MAX_CORES = 10**5  # cores of a device (a list per core is kept; 1e5 is far above any chip)


def _check_real(value: object, what: str) -> float:
    """``value`` as a float; a boolean, a non-number, an infinity or a NaN raises (``what``: "a number",
    "an integer")."""
    if isinstance(value, bool):
        raise PydanticCustomError("number_type", "expected {what}, not a boolean", {"what": what})
    if not isinstance(value, numbers.Real):
        raise PydanticCustomError("number_type", "expected {what}", {"what": what})
    try:
        v = float(value)
    except OverflowError:
        raise PydanticCustomError("finite_number", "expected a finite number; this one is too large") from None
    if not math.isfinite(v):
        raise PydanticCustomError("finite_number", "expected a finite number")
    return v


def _real(value: object) -> object:
    """A finite real number (a float or an int, passed on as given so that range errors quote it; other real
    types as a float); booleans, strings, infinities and NaN refused."""
    v = _check_real(value, "a number")
    return value if type(value) in (int, float) else v


def _integer(value: object) -> object:
    """An integer; a float with an integral value is converted; booleans, strings and fractions refused. An
    integer too large for a float is passed on as it is (the field's upper bound refuses it)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    v = _check_real(value, "an integer")
    if v != int(v):
        raise PydanticCustomError("int_from_float", "expected an integer")
    return value if type(value) is float else int(v)


def _strict_integer(value: object) -> object:
    """An integer (Python's or NumPy's); booleans, floats (an integral one too) and strings refused."""
    if isinstance(value, bool | np.bool_):
        raise PydanticCustomError("int_type", "expected an integer, not a boolean")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        raise PydanticCustomError("int_type", "expected an integer, without a decimal point or exponent")
    raise PydanticCustomError("int_type", "expected an integer")


def _flag(value: object) -> object:
    """A boolean (Python's, or NumPy's from a computed sweep value); strings and numbers refused."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise PydanticCustomError("bool_type", "expected true or false (a YAML boolean, unquoted)")


def _bit_width_key(value: object) -> object:
    """A bit width as a mapping key: an integer, or its digits as a string (keys of a JSON dump)."""
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 6:
        return int(value)
    return _integer(value)


#: A finite real number (float; ints accepted), not a boolean: add the range with ``Field(...)``.
Real = Annotated[float, BeforeValidator(_real), Field(allow_inf_nan=False)]
#: An integer (an integral float accepted), not a boolean: add the range with ``Field(...)``.
Integer = Annotated[int, BeforeValidator(_integer)]
#: An integer only: booleans, floats (``5.0`` too) and strings refused: add the range with ``Field(...)``.
StrictInteger = Annotated[int, BeforeValidator(_strict_integer)]
#: ``true`` or ``false`` (a YAML boolean); strings (``'yes'``, ``'false'``) and numbers refused.
Flag = Annotated[bool, BeforeValidator(_flag)]
#: A bit width (up to MAX_BITS), e.g. the keys of ``macs_per_cycle`` (the model checks > 0, naming the field).
BitWidth = Annotated[int, BeforeValidator(_bit_width_key), Field(le=MAX_BITS)]
#: A per-cycle rate by bit width (``macs_per_cycle``): finite, at most MAX_PER_CYCLE (> 0: checked by the model).
RateByBits = dict[BitWidth, Annotated[Real, Field(le=MAX_PER_CYCLE)]]
