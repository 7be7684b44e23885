"""Names an emitted file's Python reads and nothing defines (tests/test_emit.py checks the golden files;
tests/ref/test_emitted_python.py's load_emitted every file the planner's tests emit)."""
import builtins
import symtable


def undefined_names(text: str) -> set[str]:
    """The global names an emitted file's Python reads (in its module body, classes or functions) that neither the
    module binds (def, class, assignment, import) nor Python provides: each a NameError when that code runs. The GPU
    tests run the code; CI has no GPU, so this reads it."""
    top = symtable.symtable(text, "<emitted>", "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()} | set(dir(builtins))
    missing = {s.get_name() for s in top.get_symbols() if s.is_referenced() and s.get_name() not in bound}
    tables = list(top.get_children())
    while tables:
        table = tables.pop()
        tables.extend(table.get_children())
        missing |= {s.get_name() for s in table.get_symbols()
                    if s.is_referenced() and s.is_global() and s.get_name() not in bound}
    return missing
