"""A SWE-bench style rollout: the model's patch, the oracle patch and the harness's test results."""

from __future__ import annotations

from typing import Any

from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.models import Rollout
from deeprepo_web.runs.services import run_create

ORACLE = """diff --git a/src/flask/helpers.py b/src/flask/helpers.py
--- a/src/flask/helpers.py
+++ b/src/flask/helpers.py
@@ -120,7 +120,9 @@ def get_root_path(import_name: str) -> str:
     mod = sys.modules.get(import_name)
-    if mod is not None and hasattr(mod, "__file__"):
+    if mod is not None and getattr(mod, "__file__", None) is not None:
         return os.path.dirname(os.path.abspath(mod.__file__))
+
+    # Namespace packages have no __file__; fall back to the loader.
     loader = pkgutil.get_loader(import_name)
     if loader is None or import_name == "__main__":
         return os.getcwd()
"""

MODEL = """diff --git a/src/flask/helpers.py b/src/flask/helpers.py
--- a/src/flask/helpers.py
+++ b/src/flask/helpers.py
@@ -120,7 +120,7 @@ def get_root_path(import_name: str) -> str:
     mod = sys.modules.get(import_name)
-    if mod is not None and hasattr(mod, "__file__"):
+    if mod is not None and mod.__file__:  # <script>alert(1)</script>
         return os.path.dirname(os.path.abspath(mod.__file__))
     loader = pkgutil.get_loader(import_name)
     if loader is None or import_name == "__main__":
diff --git a/tests/test_helpers.py b/tests/test_helpers.py
--- a/tests/test_helpers.py
+++ b/tests/test_helpers.py
@@ -1,3 +1,6 @@
 import flask
+
+def test_namespace_root_path():
+    assert flask.helpers.get_root_path("nspkg")
"""


def swebench_rollout(project: Any) -> Rollout:
    run, _ = run_create(project=project, name="SWE-bench Verified · Qwen3-30B-A3B (GRPO)", kind="eval",
                        status="finished", model="Qwen/Qwen3-30B-A3B-Instruct-2507", environment="swebench",
                        source="swebench")
    rollouts_ingest(run=run, rollouts=[{
        "uid": "pallets__flask-5014", "example_key": "pallets__flask-5014", "oracle": ORACLE,
        "reward": 0.0, "reward_components": {"FAIL_TO_PASS": 0.5, "PASS_TO_PASS": 1.0},
        "final_answer": MODEL,
        "metrics": {"patch_successfully_applied": True, "touches_tests": True, "tests_status": {
            "FAIL_TO_PASS": {"success": ["tests/test_helpers.py::test_root_path"],
                             "failure": ["tests/test_helpers.py::test_namespace_pkg_root"]},
            "PASS_TO_PASS": {"success": ["tests/test_basic.py::test_app", "tests/test_basic.py::test_url"],
                             "failure": []},
        }},
        "turns": [{"role": "user", "content": "Fix the issue."}, {"role": "assistant", "content": "Done."}],
    }])
    return Rollout.objects.get(run=run)
