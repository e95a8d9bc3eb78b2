# The part of radon's visitors that tests/test_code_shape.py reads.
class Function:
    name: str
    lineno: int
    complexity: int
    closures: list[Function]
    @property
    def fullname(self) -> str: ...

class Class:
    name: str
    lineno: int
    complexity: int
    methods: list[Function]
