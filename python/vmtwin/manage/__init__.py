"""The management plane: vCenter task execution under load, and vATM adaptive task throttling.

See docs/manage.md. :mod:`~vmtwin.manage.vcenter` is the platform (stages, operations, inventory),
:mod:`~vmtwin.manage.control` vATM's control law, :mod:`~vmtwin.manage.policies` the throttling
policies and runs, :mod:`~vmtwin.manage.workloads` the task streams.
"""

from vmtwin.manage.control import VatmConfig, VatmController
from vmtwin.manage.policies import Policy, RunResult, optimal_static, run_stream
from vmtwin.manage.vcenter import OPERATIONS, Operation, VcenterParams
from vmtwin.manage.workloads import TaskStream, paper_workload, read_task_csv

__all__ = ["OPERATIONS", "Operation", "Policy", "RunResult", "TaskStream", "VatmConfig", "VatmController",
           "VcenterParams", "optimal_static", "paper_workload", "read_task_csv", "run_stream"]
