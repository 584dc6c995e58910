"""collect(): every download shape becomes one Found per student, and untrusted archives stay harmless."""

from __future__ import annotations

import dataclasses
import stat
import zipfile
from pathlib import Path

import pytest

import grader.intake.choose as choose_module
import grader.intake.collect as collect_module
import grader.intake.tree as tree_module
from grader.errors import GraderError
from grader.intake.collect import CollectError, Collection, Found, collect

ENGINE = b"class Value:\n    def __init__(self, data):\n        self.data = data\n"
HELPER = b"def helper():\n    return 1\n"

GRADESCOPE_METADATA = """\
submission_101:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1815'
    :email: ada@example.edu
  :created_at: 2024-02-01 10:00:00.000000000 -08:00
  :score: !ruby/object:BigDecimal 18:0.9e1
submission_102:
  :submitters:
  - :name: Pair One
    :sid: '200'
    :email: one@example.edu
  - :name: Pair Two
    :sid: '201'
    :email: two@example.edu
  :created_at: 2024-02-01 11:00:00.000000000 -08:00
submission_103:
  :submitters:
  - :name: No Sid
    :email: nosid@example.edu
"""


def make_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def make_dir(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root


def mark_encrypted(archive: Path, member: str) -> None:
    """zipfile cannot write encrypted members, so set the flag bit in the central directory by hand."""
    data = bytearray(archive.read_bytes())
    header = data.index(b"PK\x01\x02")  # first central directory entry; each holds its name at offset 46
    name = member.encode()
    while True:
        name_len = int.from_bytes(data[header + 28 : header + 30], "little")
        if data[header + 46 : header + 46 + name_len] == name:
            break
        header = data.index(b"PK\x01\x02", header + 4)
    data[header + 8] |= 0x1
    archive.write_bytes(bytes(data))


def by_student(result: Collection) -> dict[str, Found]:
    return {f.student: f for f in result.submissions}


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


# --- input kinds ------------------------------------------------------------------------------------------------


def test_folder_of_student_folders(tmp_path: Path) -> None:
    root = make_dir(tmp_path / "subs", {"alice/autograd_lab.py": ENGINE, "bob/autograd_lab.py": ENGINE + b"#b\n"})
    result = collect(root)
    assert result.kind == "folders"
    assert [f.student for f in result.submissions] == ["alice", "bob"]
    bob = by_student(result)["bob"]
    assert bob.source == ENGINE + b"#b\n" and bob.name == "bob" and bob.problem == "" and bob.notices == ()
    assert bob.origin == str(root / "bob" / "autograd_lab.py")
    assert result.warnings == ()


def test_plain_zip_wrapped_in_one_folder_ignores_mac_junk(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "lab.zip",
        {
            "class/alice/autograd_lab.py": ENGINE,
            "class/alice/.DS_Store": b"\0",
            "class/bob/autograd_lab.py": ENGINE,
            "__MACOSX/class/alice/._autograd_lab.py": b"\0\5junk",
            "class/.DS_Store": b"\0",
        },
    )
    result = collect(archive)
    assert result.kind == "zip"
    assert [f.student for f in result.submissions] == ["alice", "bob"]
    assert by_student(result)["alice"].origin == "lab.zip:class/alice/autograd_lab.py"
    assert result.warnings == ()
    assert all(f.notices == () for f in result.submissions)


def test_plain_zip_without_wrapper_and_a_stray_top_level_file(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "x.zip", {"alice/autograd_lab.py": ENGINE, "bob/autograd_lab.py": ENGINE, "README.txt": b"hi"}
    )
    result = collect(archive)
    assert [f.student for f in result.submissions] == ["alice", "bob"]
    assert any("README.txt" in w for w in result.warnings)


def test_a_zip_of_one_student_folder_is_that_student(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "alice.zip", {"alice/autograd_lab.py": ENGINE, "alice/tests/t.py": HELPER})
    result = collect(archive)
    assert [f.student for f in result.submissions] == ["alice"]
    assert result.submissions[0].source == ENGINE and result.warnings == ()


def test_gradescope_export(tmp_path: Path) -> None:
    root = "assignment_999_export/"
    archive = make_zip(
        tmp_path / "export.zip",
        {
            f"{root}submission_metadata.yml": GRADESCOPE_METADATA.encode(),
            f"{root}submission_101/autograd_lab.py": ENGINE,
            f"{root}submission_102/autograd_lab.py": ENGINE + b"#group\n",
            f"{root}submission_103/autograd_lab.py": ENGINE + b"#email\n",
        },
    )
    result = collect(archive)
    assert result.kind == "gradescope"
    found = by_student(result)
    assert set(found) == {"1815", "200", "nosid_example.edu"}
    ada = found["1815"]
    assert ada.name == "Ada Lovelace" and ada.source == ENGINE and ada.problem == ""
    assert ada.origin == "export.zip:assignment_999_export/submission_101/autograd_lab.py"
    assert found["nosid_example.edu"].name == "No Sid"
    assert result.warnings == ()


def test_gradescope_group_submission_is_filed_under_the_first_submitter(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "export.zip",
        {
            "submission_metadata.yml": GRADESCOPE_METADATA.encode(),
            "submission_102/autograd_lab.py": ENGINE,
        },
    )
    group = by_student(collect(archive))["200"]
    assert group.name == "Pair One" and group.source == ENGINE
    assert any("group submission" in n and "Pair Two" in n for n in group.notices)


def test_gradescope_without_metadata_falls_back_to_folder_names(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "export.zip",
        {"assignment_1_export/submission_7/autograd_lab.py": ENGINE, "assignment_1_export/submission_8/a.py": HELPER},
    )
    result = collect(archive)
    assert result.kind == "gradescope"
    assert [f.student for f in result.submissions] == ["submission_7", "submission_8"]
    assert any("submission_metadata.yml" in w for w in result.warnings)


def test_gradescope_metadata_lists_a_submission_without_files(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "export.zip",
        {"submission_metadata.yml": GRADESCOPE_METADATA.encode(), "submission_101/autograd_lab.py": ENGINE},
    )
    found = by_student(collect(archive))
    assert found["1815"].problem == ""
    assert "no files" in found["200"].problem and found["200"].source is None


def test_canvas_zip_with_late_and_resubmission(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "submissions.zip",
        {
            "lovelaceada_12345_67890_autograd_lab.py": ENGINE + b"#old\n",
            "lovelaceada_12345_67999_autograd_lab-1.py": ENGINE + b"#new\n",
            "lovelaceada_12345_67995_notes.txt": b"notes",
            "turingalan_late_222_333_autograd_lab.py": ENGINE + b"#late\n",
            "hopper_LATE_444_555_Autograd_Lab.py": ENGINE + b"#upper late\n",
        },
    )
    result = collect(archive)
    assert result.kind == "canvas"
    found = by_student(result)
    assert set(found) == {"12345", "222", "444"}
    ada = found["12345"]
    assert ada.name == "lovelaceada" and ada.source == ENGINE + b"#new\n"
    assert ada.origin == "submissions.zip:lovelaceada_12345_67999_autograd_lab-1.py"
    assert any("autograd_lab.py" in n and "not graded" in n for n in ada.notices)
    assert any("notes.txt" in n for n in ada.notices)
    alan = found["222"]
    assert alan.name == "turingalan" and alan.source == ENGINE + b"#late\n"
    assert "Canvas marked this submission late" in alan.notices
    assert found["444"].source == ENGINE + b"#upper late\n"
    assert any("Autograd_Lab.py" in n for n in found["444"].notices)


def test_canvas_download_unzipped_into_a_folder(tmp_path: Path) -> None:
    root = make_dir(
        tmp_path / "dl",
        {"lovelaceada_12345_67890_autograd_lab.py": ENGINE, "late_anon_Ab3dE_777_autograd_lab.py": ENGINE + b"#a\n"},
    )
    result = collect(root)
    assert result.kind == "canvas"
    found = by_student(result)
    assert set(found) == {"12345", "anon_Ab3dE"}
    assert found["anon_Ab3dE"].source == ENGINE + b"#a\n"
    assert "Canvas marked this submission late" in found["anon_Ab3dE"].notices


def test_canvas_files_not_named_by_canvas_are_reported(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "c.zip",
        {"a_1_2_autograd_lab.py": ENGINE, "b_3_4_autograd_lab.py": ENGINE, "grades.csv": b"x"},
    )
    result = collect(archive)
    assert result.kind == "canvas"
    assert any("grades.csv" in w for w in result.warnings)


# --- choosing the file ------------------------------------------------------------------------------------------


def test_misnamed_file_is_graded_with_a_notice(tmp_path: Path) -> None:
    root = make_dir(
        tmp_path / "s",
        {
            "a/Autograd_Lab.py": ENGINE,
            "b/autograd-lab.py": ENGINE,
            "c/autograd lab.py": ENGINE,
            "d/autograd_lab (1).py": ENGINE,
        },
    )
    for found in collect(root).submissions:
        assert found.source == ENGINE, found
        assert len(found.notices) == 1 and "as autograd_lab.py" in found.notices[0], found


def test_nested_folder_shallowest_exact_match_wins(tmp_path: Path) -> None:
    root = make_dir(
        tmp_path / "s",
        {
            "alice/lab/autograd_lab.py": ENGINE,
            "alice/lab/old/autograd_lab.py": HELPER,
            "alice/.ipynb_checkpoints/autograd_lab-checkpoint.py": HELPER,
        },
    )
    alice = by_student(collect(root))["alice"]
    assert alice.source == ENGINE
    assert alice.origin.endswith(str(Path("alice", "lab", "autograd_lab.py")))
    assert any("lab/old/autograd_lab.py" in n for n in alice.notices)


def test_two_equally_good_exact_matches_are_a_problem(tmp_path: Path) -> None:
    root = make_dir(tmp_path / "s", {"alice/v1/autograd_lab.py": ENGINE, "alice/v2/autograd_lab.py": ENGINE})
    alice = by_student(collect(root))["alice"]
    assert alice.source is None
    assert "v1/autograd_lab.py" in alice.problem and "v2/autograd_lab.py" in alice.problem


def test_the_only_python_file_is_used(tmp_path: Path) -> None:
    root = make_dir(tmp_path / "s", {"alice/my_engine.py": ENGINE, "alice/readme.md": b"x"})
    alice = by_student(collect(root))["alice"]
    assert alice.source == ENGINE
    assert alice.notices == (
        "graded my_engine.py as autograd_lab.py: it is the only Python file",
        "also submitted, not graded: readme.md",
    )


def test_several_python_files_pick_the_one_defining_value(tmp_path: Path) -> None:
    root = make_dir(
        tmp_path / "s",
        {"alice/engine.py": b"import x\n\nclass Value(object):\n    pass\n", "alice/test_it.py": b"# class Value\n"},
    )
    alice = by_student(collect(root))["alice"]
    assert alice.source is not None and alice.source.startswith(b"import x")
    assert any("engine.py" in n and "class Value" in n for n in alice.notices)


def test_several_python_files_without_a_clear_engine_are_a_problem(tmp_path: Path) -> None:
    root = make_dir(
        tmp_path / "s", {"alice/a.py": HELPER, "alice/b.py": HELPER, "bob/a.py": ENGINE, "bob/b.py": ENGINE}
    )
    found = by_student(collect(root))
    for student in ("alice", "bob"):
        assert found[student].source is None
        assert "a.py" in found[student].problem and "b.py" in found[student].problem


def test_notebook_only_is_refused(tmp_path: Path) -> None:
    root = make_dir(tmp_path / "s", {"alice/autograd_lab.ipynb": b"{}"})
    alice = by_student(collect(root))["alice"]
    assert alice.source is None
    assert "notebooks are not accepted" in alice.problem and "autograd_lab.py" in alice.problem


def test_no_python_file_lists_what_was_found(tmp_path: Path) -> None:
    root = make_dir(tmp_path / "s", {"alice/a.txt": b"x", "alice/b.pdf": b"x"})
    alice = by_student(collect(root))["alice"]
    assert alice.problem == "no Python file was submitted (found: a.txt, b.pdf)"


def test_empty_folder_in_a_directory_and_in_a_zip(tmp_path: Path) -> None:
    root = make_dir(tmp_path / "s", {"bob/autograd_lab.py": ENGINE})
    (root / "alice").mkdir()
    archive = make_zip(tmp_path / "z.zip", {"alice/": b"", "alice/.DS_Store": b"\0", "bob/autograd_lab.py": ENGINE})
    for result in (collect(root), collect(archive)):
        alice = by_student(result)["alice"]
        assert alice.source is None and "nothing was submitted" in alice.problem


def test_oversized_file_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    root = make_dir(tmp_path / "s", {"alice/autograd_lab.py": b"#" * 2000, "bob/autograd_lab.py": b"#" * 100})
    archive = make_zip(tmp_path / "z.zip", {"alice/autograd_lab.py": b"#" * 2000, "bob/autograd_lab.py": b"#" * 100})
    for result in (collect(root, max_file_bytes=1000), collect(archive, max_file_bytes=1000)):
        alice, bob = by_student(result)["alice"], by_student(result)["bob"]
        assert alice.source is None
        assert alice.problem == "autograd_lab.py is 2.0 KiB, over the 1000 bytes limit"
        assert bob.source == b"#" * 100


def test_a_member_whose_header_understates_its_size_is_still_capped(tmp_path: Path) -> None:
    """The declared size is only a hint: the read itself stops at max_file_bytes + 1."""
    archive = make_zip(tmp_path / "z.zip", {"alice/autograd_lab.py": b"#" * 5000})
    budget = tree_module.Budget(10_000)
    rules = choose_module.Rules("autograd_lab.py", 1000, budget)
    with zipfile.ZipFile(archive) as zf:
        (real,) = tree_module.zip_tree(zf, "z.zip").files
        lying = dataclasses.replace(real, size=10)
        pick = choose_module._choose([choose_module.Cand(lying, "autograd_lab.py", "autograd_lab.py")], rules)
        source, problem = choose_module.load(pick, rules)
    assert real.size == 5000
    assert source is None and "more than 1000 bytes" in problem
    assert budget.remaining == 10_000 - 1001


def test_total_read_budget_turns_into_problems_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree_module, "MAX_TOTAL_BYTES", 150)
    archive = make_zip(tmp_path / "z.zip", {f"s{i}/autograd_lab.py": b"#" * 100 for i in range(3)})
    result = collect(archive)
    graded = [f for f in result.submissions if f.source is not None]
    refused = [f for f in result.submissions if f.source is None]
    assert len(graded) == 2 and len(refused) == 1
    assert "larger than" in refused[0].problem
    assert any("stopped reading" in w for w in result.warnings)


# --- safety -----------------------------------------------------------------------------------------------------


def test_zip_slip_symlink_and_encrypted_members_are_skipped(tmp_path: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../evil.py", ENGINE)
        zf.writestr("/abs.py", ENGINE)
        zf.writestr("alice/../../escape.py", ENGINE)
        link = zipfile.ZipInfo("alice/link.py")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
        zf.writestr("bob/autograd_lab.py", ENGINE)
        zf.writestr("alice/autograd_lab.py", ENGINE)
    mark_encrypted(archive, "bob/autograd_lab.py")
    before = files_under(tmp_path)
    result = collect(archive)
    assert files_under(tmp_path) == before
    assert not (tmp_path.parent / "evil.py").exists() and not Path("/abs.py").exists()
    text = "\n".join(result.warnings)
    for member, reason in [
        ("../evil.py", "'..'"),
        ("/abs.py", "absolute"),
        ("alice/../../escape.py", "'..'"),
        ("alice/link.py", "symbolic link"),
        ("bob/autograd_lab.py", "encrypted"),
    ]:
        assert f"skipped '{member}': " in text and reason in text, member
    found = by_student(result)
    assert found["alice"].source == ENGINE and found["alice"].notices == ()
    assert set(found) == {"alice"}


def test_symlinks_in_a_folder_are_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.py"
    secret.write_bytes(b"SECRET = 1\n")
    root = make_dir(tmp_path / "s", {"bob/autograd_lab.py": ENGINE})
    (root / "alice").mkdir()
    (root / "alice" / "autograd_lab.py").symlink_to(secret)
    (root / "mallory").symlink_to(tmp_path, target_is_directory=True)
    result = collect(root)
    found = by_student(result)
    assert set(found) == {"alice", "bob"}
    assert found["alice"].source is None
    assert sum("symbolic link" in w for w in result.warnings) == 2


def test_nested_zip_is_never_opened(tmp_path: Path) -> None:
    inner = make_zip(tmp_path / "inner.zip", {"autograd_lab.py": ENGINE})
    archive = make_zip(tmp_path / "outer.zip", {"alice/work.zip": inner.read_bytes(), "bob/autograd_lab.py": ENGINE})
    result = collect(archive)
    alice = by_student(result)["alice"]
    assert alice.source is None and "work.zip" in alice.problem
    assert any("alice/work.zip" in w and "not opened" in w for w in result.warnings)


def test_too_many_members_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree_module, "MAX_MEMBERS", 3)
    archive = make_zip(tmp_path / "big.zip", {f"s{i}/autograd_lab.py": ENGINE for i in range(4)})
    with pytest.raises(CollectError, match="4 members"):
        collect(archive)


def test_corrupt_member_is_one_students_problem(tmp_path: Path) -> None:
    archive = tmp_path / "z.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("alice/autograd_lab.py", ENGINE * 50)
        zf.writestr("bob/autograd_lab.py", ENGINE)
    data = bytearray(archive.read_bytes())
    start = data.index(b"alice/autograd_lab.py") + len(b"alice/autograd_lab.py")
    data[start + 5 : start + 15] = b"\xff" * 10  # damage alice's compressed bytes, not the directory
    archive.write_bytes(bytes(data))
    found = by_student(collect(archive))
    assert found["alice"].source is None and "could not read" in found["alice"].problem
    assert found["bob"].source == ENGINE


# --- ids --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Zoë Smith", "Zoe_Smith"),
        ("..", "student"),
        (".hidden", "hidden"),
        ("-rf", "rf"),
        ("a/b\\c", "a_b_c"),
        ("", "student"),
        ("x" * 200, "x" * 80),
        ("ada@example.edu", "ada_example.edu"),
    ],
)
def test_ids_are_filesystem_safe(raw: str, expected: str) -> None:
    assert collect_module._safe_id(raw) == expected


def test_colliding_ids_get_suffixes_with_a_notice(tmp_path: Path) -> None:
    root = make_dir(
        tmp_path / "s",
        {"Zoë/autograd_lab.py": ENGINE, "Zoe/autograd_lab.py": ENGINE, "zoe/autograd_lab.py": ENGINE},
    )
    if len({p.name for p in root.iterdir()}) < 3:
        pytest.skip("case-insensitive filesystem cannot hold Zoe and zoe side by side")
    found = by_student(collect(root))
    assert set(found) == {"Zoe", "Zoe-2", "zoe-3"}  # unique even where case does not count
    assert found["Zoe"].notices == ()
    assert found["Zoe-2"].origin.endswith(str(Path("Zoë", "autograd_lab.py")))
    assert found["Zoe-2"].notices == (
        "id 'Zoë' was changed to 'Zoe' to be safe as a folder name",
        "another submission already uses the id 'Zoe'; this one is filed as 'Zoe-2'",
    )
    assert any("already uses the id 'zoe'" in n for n in found["zoe-3"].notices)


def test_gradescope_same_student_twice_is_not_merged(tmp_path: Path) -> None:
    entry = "  :submitters:\n  - :name: A\n    :sid: '7'\n"
    meta = f"submission_1:\n{entry}submission_2:\n{entry}"
    archive = make_zip(
        tmp_path / "e.zip",
        {"submission_metadata.yml": meta.encode(), "submission_1/autograd_lab.py": ENGINE, "submission_2/x.py": HELPER},
    )
    found = by_student(collect(archive))
    assert set(found) == {"7", "7-2"}
    assert found["7"].source != found["7-2"].source


def test_unsafe_ids_never_escape_or_vanish(tmp_path: Path) -> None:
    meta = (
        "submission_1:\n  :submitters:\n  - :name: Dots\n    :sid: '..'\n"
        "submission_2:\n  :submitters:\n  - :name: Slash\n    :sid: '../../etc'\n"
    )
    archive = make_zip(
        tmp_path / "e.zip",
        {
            "submission_metadata.yml": meta.encode(),
            "submission_1/autograd_lab.py": ENGINE,
            "submission_2/autograd_lab.py": ENGINE,
        },
    )
    ids = [f.student for f in collect(archive).submissions]
    assert ids == sorted(ids) and len(ids) == 2
    for ident in ids:
        assert ident and not ident.startswith(".") and "/" not in ident and ident not in (".", "..")


# --- unreadable inputs ------------------------------------------------------------------------------------------


def test_missing_path_raises_collect_error(tmp_path: Path) -> None:
    with pytest.raises(CollectError, match="no such file or folder") as info:
        collect(tmp_path / "nope.zip")
    assert isinstance(info.value, GraderError) and info.value.exit_code == 5


def test_not_a_zip_raises_collect_error(tmp_path: Path) -> None:
    junk = tmp_path / "export.zip"
    junk.write_bytes(b"this is not a zip at all")
    with pytest.raises(CollectError, match="neither a folder nor a zip"):
        collect(junk)


def test_zip_with_a_damaged_directory_raises_collect_error(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "z.zip", {"alice/autograd_lab.py": ENGINE})
    data = archive.read_bytes().replace(b"PK\x01\x02", b"XX\x01\x02")  # central directory signature
    archive.write_bytes(data)
    with pytest.raises(CollectError, match="damaged"):
        collect(archive)
