"""Inventory graph: a vSphere inventory as a graph in an embedded Cypher database, and the
questions of Soundararajan and Spracklen, "Simplifying Virtualization Management with Graph
Databases" (VMware Technical Journal, 2013), as named queries.

- :mod:`~vmtwin.inventory.model`: the schema (node types, follow/member/uses edges) and
  :class:`Inventory`, what every source fills;
- sources: :mod:`~vmtwin.inventory.synthetic` (seeded generator), :mod:`~vmtwin.inventory.rvtools`
  (RVTools CSV sheets), :mod:`~vmtwin.inventory.vcenter` (a live vCenter via pyvmomi),
  :mod:`~vmtwin.inventory.figure1` (the paper's Figure 1);
- :mod:`~vmtwin.inventory.store`: the LadybugDB graph folder (write, open read-only, query);
- :mod:`~vmtwin.inventory.queries`: the named queries, each beside the paper's original;
- :mod:`~vmtwin.inventory.cli`: ``vmtwin inventory``.
"""

from vmtwin.inventory.model import NODE_TYPES, REL_TYPES, Inventory
from vmtwin.inventory.queries import QUERIES, NamedQuery
from vmtwin.inventory.store import Graph, Result, open_graph, write_graph

__all__ = ["NODE_TYPES", "REL_TYPES", "Inventory", "QUERIES", "NamedQuery", "Graph", "Result",
           "open_graph", "write_graph"]
