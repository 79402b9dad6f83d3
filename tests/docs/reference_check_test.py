#!/usr/bin/env python3
"""Proves that `scripts/gen-reference --check` fails when docs/reference/ and the code disagree,
in either direction: rows planted in or removed from the pages, a wrong default or label list, a
cell left to write; and the code gaining a flag, an environment variable, a metric family, a
scenario setting, or changing a default or the Deployment. The code's side is changed by editing
what was collected from it, so nothing in the tree is touched.

    reference_check_test.py --tenon build/cmd/tenon --facts-tool build/tests/docs/reference_facts
"""
import argparse
import copy
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_generator():
    path = os.path.join(ROOT, "scripts", "gen-reference")
    loader = importlib.machinery.SourceFileLoader("gen_reference", path)
    spec = importlib.util.spec_from_loader("gen_reference", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


gen = load_generator()
ARGS = None


class ReferenceCheck(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.data = gen.collect(ARGS.tenon, ARGS.facts_tool)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="reference-check-")
        self.docs = os.path.join(self.tmp, "reference")
        shutil.copytree(os.path.join(ROOT, "docs", "reference"), self.docs)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def edit(self, page, old, new):
        path = os.path.join(self.docs, page)
        with open(path) as f:
            text = f.read()
        self.assertIn(old, text, f"{page} no longer holds the line this test plants into")
        with open(path, "w") as f:
            f.write(text.replace(old, new, 1))

    def row(self, page, key):
        with open(os.path.join(self.docs, page)) as f:
            return next(line for line in f.read().split("\n") if f"| {key} |" in line)

    def fails(self, data=None, *expected):
        ok, report = gen.check(data or self.data, self.docs)
        text = "\n".join(report)
        self.assertFalse(ok, "the check passed")
        for e in expected:
            self.assertIn(e, text)
        self.assertIn("Regenerate with `scripts/gen-reference`", text)
        return text

    # -- The committed pages.

    def test_committed_pages_agree_with_the_code(self):
        ok, report = gen.check(self.data, self.docs)
        self.assertTrue(ok, "\n".join(report))

    # -- Planted in the pages.

    def test_extra_settings_row_fails(self):
        tick = self.row("settings.md", "`--tick`")
        self.edit("settings.md", tick, tick + "\n| Made up | `--made-up` | `1` | Planted. |")
        self.fails(None, "-| Made up | `--made-up` | `1` | Planted. |")

    def test_wrong_default_fails(self):
        row = self.row("settings.md", "`--catalog-every`")
        self.edit("settings.md", row, row.replace("`5m`", "`10m`"))
        self.fails(None, "-" + row.replace("`5m`", "`10m`"), "+" + row)

    def test_wrong_environment_default_fails(self):
        row = self.row("settings.md", "`BATCH_MAX_DURATION`")
        self.edit("settings.md", row, row.replace("`10s`", "`15s`"))
        self.fails(None, "+" + row)

    def test_missing_metric_row_fails(self):
        row = self.row("metrics.md", "`karpenter_nodes_created_total`")
        self.edit("metrics.md", row + "\n", "")
        # The row comes back, its meaning to be written again.
        self.fails(None,
                   "+| `karpenter_nodes_created_total` | counter | `nodepool`, `zone` | TODO |",
                   "to write by hand: metrics.md: Karpenter's metrics: "
                   "`karpenter_nodes_created_total`: Meaning")

    def test_extra_metric_row_fails(self):
        row = self.row("metrics.md", "`tenon_pods`")
        planted = "| `tenon_made_up_total` | counter | — | Planted. |"
        self.edit("metrics.md", row, row + "\n" + planted)
        self.fails(None, "-" + planted)

    def test_wrong_labels_fail(self):
        row = self.row("metrics.md", "`tenon_pods`")
        self.edit("metrics.md", row, row.replace("| `state` |", "| `phase` |"))
        self.fails(None, "+" + row)

    def test_changed_command_option_fails(self):
        row = self.row("commands.md", "`--snapshot-min-interval`")
        self.edit("commands.md", row, row.replace("`15m`", "`5m`"))
        self.fails(None, "+" + row)

    def test_meaning_left_to_write_fails(self):
        row = self.row("settings.md", "`--tick`")
        planted = row[:row.rindex("| ", 0, len(row) - 2)] + "| TODO |"
        self.edit("settings.md", row, planted)
        self.fails(None, "to write by hand: settings.md: `tenon run`: `--tick`: Meaning")

    # -- Changed in the code.

    def test_new_flag_in_the_code_fails(self):
        data = copy.deepcopy(self.data)
        data["commands"]["run"]["options"].append(
            {"names": ["--made-up"], "type": "TEXT", "default": "", "required": False,
             "description": "planted"})
        self.fails(data, "`tenon run --made-up` is not in reference_facts' RunSettings",
                   "+| `--made-up` | text |  | planted |")

    def test_new_default_in_the_code_fails(self):
        data = copy.deepcopy(self.data)
        next(r for r in data["facts"]["run"] if r["flag"] == "--tick")["default"] = "2s"
        self.fails(data, "| `--tick` | `2s` |")

    def test_help_and_run_options_disagreeing_fails(self):
        data = copy.deepcopy(self.data)
        option = next(o for o in data["commands"]["run"]["options"] if "--tick" in o["names"])
        option["default"] = "3s"
        self.fails(data, "`tenon run --tick`: --help shows the default 3s, RunOptions holds 1s")

    def test_new_environment_variable_in_the_code_fails(self):
        data = copy.deepcopy(self.data)
        data["environment"]["TENON_MADE_UP"] = {"files": {"cmd/main.cc"}, "fallback": None}
        self.fails(data, "+| TODO | `TENON_MADE_UP` | — | TODO |",
                   "to write by hand: settings.md: Process environment: `TENON_MADE_UP`")

    def test_variable_no_longer_read_fails(self):
        data = copy.deepcopy(self.data)
        del data["environment"]["AWS_ROLE_SESSION_NAME"]
        self.fails(data, "-| Role session name | `AWS_ROLE_SESSION_NAME` |")

    def test_metric_family_without_a_series_fails(self):
        data = copy.deepcopy(self.data)
        data["metric_families"]["karpenter_made_up_total"] = "counter"
        self.fails(data, "the metric family karpenter_made_up_total (adapters/metrics/) has no "
                   "series")

    def test_metric_type_changed_in_the_code_fails(self):
        data = copy.deepcopy(self.data)
        data["metric_families"]["tenon_pods"] = "counter"
        self.fails(data, "tenon_pods: registered as a counter, collected as a gauge")

    def test_new_scenario_setting_fails(self):
        data = copy.deepcopy(self.data)
        data["scenario_keys"] = data["scenario_keys"] + ["madeUp"]
        self.fails(data, "scenarios take settings.madeUp")

    def test_changed_deployment_fails(self):
        data = copy.deepcopy(self.data)
        row = next(r for r in data["deployment"] if r["key"] == "BATCH_IDLE_DURATION")
        row["value"] = "`2s`"
        self.fails(data, "+| Batch idle duration | `BATCH_IDLE_DURATION` | `2s` |")

    def test_unnamed_feature_gate_fails(self):
        data = copy.deepcopy(self.data)
        data["feature_gates"] = data["feature_gates"] + ["MadeUpGate"]
        self.fails(data, "the feature gate MadeUpGate is recognized by the code but not named")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tenon", required=True)
    parser.add_argument("--facts-tool", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest)
