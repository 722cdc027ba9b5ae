"""A registry of Pydantic classes named by the default of their tag field, with listeners told of each change.

Device kinds (tag ``kind``, :mod:`hetsim.devices`) and arrival processes (tag ``process``,
:mod:`hetsim.scenario.arrivals`) are registered this way; the models that hold one of them (the platform, the
scenario) rebuild their tagged union when a listener is called.
"""

from __future__ import annotations

from collections.abc import Callable


class TaggedRegistry:
    """Classes derived from ``base``, by the name their ``tag`` field declares, in registration order (the order
    error messages list them in).

    Args:
        base: the class every registered class derives from.
        tag: the field whose default names a class (``kind``, ``process``).
        what: what a class is, for messages (``device kind``).
        article: ``a`` or ``an``, before ``what``.
    """

    def __init__(self, base: type, tag: str, what: str, article: str = "a"):
        self.base, self.tag, self.what, self.article = base, tag, what, article
        #: name -> class
        self.classes: dict[str, type] = {}
        self._listeners: list[Callable[[], None]] = []

    def name_of(self, cls: type) -> str:
        """The name a class declares: the default of its tag field.

        Raises:
            TypeError: the class has no such field with a default.
        """
        field = cls.model_fields.get(self.tag)
        if field is None or not isinstance(field.default, str):
            raise TypeError(f"{cls.__name__} needs a field {self.tag}: Literal['NAME'] = 'NAME'")
        return field.default

    def register(self, cls: type) -> type:
        """Register ``cls`` under its name and tell the listeners (usable as a class decorator).

        Raises:
            TypeError: ``cls`` does not derive from the base or has no tag field.
            ValueError: another class already holds its name.
        """
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            base = f"{self.base.__module__}.{self.base.__qualname__}"
            raise TypeError(f"{self.article} {self.what} must subclass {base}, got {cls!r}")
        name = self.name_of(cls)
        if self.classes.get(name, cls) is not cls:
            raise ValueError(f"{self.what} {name!r} is already registered by {self.classes[name].__name__}")
        self.classes[name] = cls
        self._changed()
        return cls

    def unregister(self, name: str) -> None:
        """Remove a class registered at run time (tests use it to clean up). Unknown names are ignored."""
        if self.classes.pop(name, None) is not None:
            self._changed()

    def on_change(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` whenever the registry changes."""
        self._listeners.append(fn)

    def _changed(self) -> None:
        for fn in self._listeners:
            fn()
