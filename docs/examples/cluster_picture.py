#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0

"""A picture of a cluster from a kcache snapshot (or cache): pods per node,
stacked by phase, saved as a PNG. What a person investigating an incident
would rather look at than read: which nodes are full, where pods are
Pending or Failed.

    cluster_picture.py SNAPSHOT_OR_CACHE [OUT.png]

Reads with the kcache Python package (docs/bindings.md), streaming the pods
one at a time; draws with matplotlib (Debian's python3-matplotlib). Also
prints the counts as a table.
"""

import collections
import sys

import matplotlib

matplotlib.use("Agg")  # a file, not a window
import matplotlib.pyplot as plt  # noqa: E402

import kcache  # noqa: E402

PHASES = ["Running", "Pending", "Succeeded", "Failed", "Unknown"]
COLORS = {"Running": "#4c9a2a", "Pending": "#e0a800", "Succeeded": "#7f8c8d",
          "Failed": "#c0392b", "Unknown": "#8e44ad"}


def count_pods(path):
    """{node: Counter(phase)} over every pod; "(unscheduled)" for no node."""
    per_node = collections.defaultdict(collections.Counter)
    with kcache.open(path) as cache:
        for pod in cache.list("pods"):
            node = pod.get("spec", {}).get("nodeName") or "(unscheduled)"
            phase = pod.get("status", {}).get("phase") or "Unknown"
            per_node[node][phase] += 1
    return per_node


def draw(per_node, title, out):
    nodes = sorted(per_node, key=lambda n: (-sum(per_node[n].values()), n))
    fig, ax = plt.subplots(figsize=(9, max(2.5, 0.35 * len(nodes) + 1)))
    left = [0] * len(nodes)
    for phase in PHASES:
        counts = [per_node[n][phase] for n in nodes]
        if any(counts):
            ax.barh(nodes, counts, left=left, color=COLORS[phase], label=phase)
            left = [a + b for a, b in zip(left, counts)]
    ax.invert_yaxis()
    ax.set_xlabel("pods")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: cluster_picture.py SNAPSHOT_OR_CACHE [OUT.png]", file=sys.stderr)
        return 2
    path, out = argv[1], argv[2] if len(argv) == 3 else "cluster.png"
    per_node = count_pods(path)
    total = sum(sum(c.values()) for c in per_node.values())
    print("%-24s %s" % ("NODE", " ".join("%9s" % p for p in PHASES)))
    for node in sorted(per_node):
        print("%-24s %s" % (node, " ".join("%9d" % per_node[node][p] for p in PHASES)))
    draw(per_node, "%d pods on %d nodes (%s)" % (total, len(per_node), path), out)
    print("%d pods, %d nodes: %s" % (total, len(per_node), out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
