"""Type hints of kiln._compiler, compiler/driver in-process (python/src/compiler_module.cpp)."""

from typing import Dict

version: str

def compile(options: Dict[str, object]) -> str: ...
