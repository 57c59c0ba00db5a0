"""The GGUF files published for a language model, as the catalog keeps them (`LanguageModel.gguf_files`,
shipped from `catalog.data.gguf_files`, edited in the admin): checked, and read as the sizing engine's
`PublishedGguf` values (llama.cpp's and Ollama's answers name the first file in the asked type)."""
from __future__ import annotations

from typing import Any

from sizing.gguf import QUANT_TYPES
from sizing.specs import PublishedGguf

MAX_REPOSITORIES = 10
MAX_FILES = 40  # per repository: every quant type llama.cpp writes, and a few of its own
EXAMPLE = ('[{"repository": "Qwen/Qwen3-14B-GGUF", "source": "https://…", "files": {"Q4_K_M": '
           '{"file": "Qwen3-14B-Q4_K_M.gguf", "bytes": null, "listed_gib": "8.4"}}}]')


def gguf_files_problem(value: Any) -> str | None:
    """What is wrong with a model's published GGUF files, in words (None: nothing)."""
    if not isinstance(value, list):
        return f"A list of repositories, such as {EXAMPLE}."
    if len(value) > MAX_REPOSITORIES:
        return f"At most {MAX_REPOSITORIES} repositories."
    for number, repository in enumerate(value, start=1):
        if not isinstance(repository, dict) or not isinstance(repository.get("repository"), str) \
                or "/" not in repository["repository"] or not isinstance(repository.get("files"), dict):
            return (f"Repository {number}: give “repository” (owner/name on the Hugging Face Hub) and "
                    f"“files” (quant type → file), such as {EXAMPLE}.")
        files = repository["files"]
        if not files or len(files) > MAX_FILES:
            return f"Repository {number}: 1 to {MAX_FILES} files."
        for quant_type, published in files.items():
            if quant_type not in QUANT_TYPES:
                return (f"Repository {number}: {str(quant_type)[:40]!r} is not a GGUF quant type llama.cpp "
                        f"writes ({', '.join(QUANT_TYPES)}).")
            if not isinstance(published, dict) or not isinstance(published.get("file"), str) \
                    or not published["file"].endswith(".gguf"):
                return f"Repository {number}, {quant_type}: give the “file”, a name ending in .gguf."
            size = published.get("bytes")
            if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
                return (f"Repository {number}, {quant_type}: “bytes” is the file's size, a whole number, "
                        "or null.")
    return None


def _in_order(files: dict) -> list[tuple[str, dict]]:
    """A repository's files in llama.cpp's order of quant types (`QUANT_TYPES`): PostgreSQL's jsonb keeps
    an object's keys in an order of its own, so the catalog's answers order them alike on every database."""
    return sorted(files.items(), key=lambda item: ORDER[item[0]])


ORDER = {quant_type: index for index, quant_type in enumerate(QUANT_TYPES)}


def published_ggufs(value: Any) -> tuple[PublishedGguf, ...]:
    """The files in the catalog's order (repositories as listed, each in llama.cpp's order of types);
    nothing where the value is not valid (the admin refuses such a value; a stored one is read as none)."""
    if not value or gguf_files_problem(value) is not None:
        return ()
    return tuple(
        PublishedGguf(repository=repository["repository"], quant_type=quant_type, file=published["file"],
                      bytes=published.get("bytes"))
        for repository in value for quant_type, published in _in_order(repository["files"])
    )


def gguf_listing(value: Any) -> list[dict]:
    """The API's and the page's words: each repository with the types it publishes and their files."""
    if not value or gguf_files_problem(value) is not None:
        return []
    return [
        {"repository": repository["repository"],
         "quant_types": [quant_type for quant_type, _published in _in_order(repository["files"])],
         "files": [{"quantization": quant_type, "file": published["file"], "bytes": published.get("bytes")}
                   for quant_type, published in _in_order(repository["files"])]}
        for repository in value
    ]
