# The part of radon's complexity module that tests/test_code_shape.py reads.
from radon.visitors import Class, Function

def cc_visit(code: str) -> list[Function | Class]: ...
