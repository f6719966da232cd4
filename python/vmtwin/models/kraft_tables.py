"""The published numbers of Kraft et al. 2013 that the models use as inputs or targets.

Transcribed from research/storage.md §B1 (tables of the paper). Times in ms, throughputs in
commands per second. Nothing here is computed.
"""

from __future__ import annotations

#: Table 2: mean number in system in isolation (N_iso), expected for 2 and 3 VMs (eq. 7).
TABLE2 = {
    "PM-1": {"iso": 11.9, "exp2": 23.8, "exp3": 35.7, "meas2": 27.5, "meas3": 43.7},
    "PM-2": {"iso": 14.1, "exp2": 28.2, "exp3": 42.3, "meas2": 30.2, "meas3": 44.6},
    "FFSB-1 S": {"iso": 4.6, "exp2": 9.2, "exp3": 13.8, "meas2": 8.5, "meas3": 12.8},
    "FFSB-1 R": {"iso": 4.8, "exp2": 9.6, "exp3": 14.4, "meas2": 8.5, "meas3": 13.3},
    "FFSB-2 S": {"iso": 3.5, "exp2": 7.0, "exp3": 10.5, "meas2": 6.4, "meas3": 9.0},
    "FFSB-2 R": {"iso": 4.0, "exp2": 8.0, "exp3": 12.0, "meas2": 7.5, "meas3": 10.0},
}

#: Table 4: mean inter-arrival time and mean service (= isolation response) time, ms.
TABLE4_IA_MS = {"PM-1": 0.72, "PM-2": 0.81, "FFSB-1 S": 3.07, "FFSB-1 R": 3.24, "FFSB-2 S": 4.36, "FFSB-2 R": 3.54}
TABLE4_ST_MS = {"PM-1": 8.61, "PM-2": 11.5, "FFSB-1 S": 13.9, "FFSB-1 R": 15.6, "FFSB-2 S": 15.2, "FFSB-2 R": 14.1}

#: Table 5: mean response time per VM (ms): isolation, Con 2 (VMs 1-2), Con 3 (VMs 1-3).
TABLE5 = {
    "PM-1": {"iso": (9.45, 8.49, 7.9), "con2": (28.3, 25.4), "con3": (47.7, 48.2, 37.8)},
    "PM-2": {"iso": (11.5, 11.9, 11.0), "con2": (31.1, 30.8), "con3": (53.3, 56.0, 43.9)},
    "FFSB-1 S": {"iso": (14.8, 13.5, 13.3), "con2": (18.4, 16.8), "con3": (24.9, 24.5, 25.2)},
    "FFSB-1 R": {"iso": (16.4, 15.2, 15.3), "con2": (21.5, 20.1), "con3": (29.8, 25.6, 28.2)},
    "FFSB-2 S": {"iso": (15.4, 15.2, 15.1), "con2": (19.9, 20.4), "con3": (24.9, 22.3, 23.6)},
    "FFSB-2 R": {"iso": (14.6, 13.7, 13.8), "con2": (19.6, 19.4), "con3": (23.5, 22.9, 23.3)},
}

#: Table 6: product-form error Δp (eq. 13) for Con 2 and Con 3.
TABLE6_DELTA_P = {
    "PM-1": (0.46, 18.4),
    "PM-2": (2.26, 64.9),
    "FFSB-1 S": (0.12, 0.06),
    "FFSB-1 R": (0.09, 0.03),
    "FFSB-2 S": (0.03, 0.05),
    "FFSB-2 R": (0.03, 0.04),
}

#: Table 7: merge values ω found by Algorithm 2 (Con 2, Con 3) and the splitting ratio Ψ.
TABLE7 = {
    "PM-1": {"psi": 1.01, "omega2": 2.55, "omega3": 4.7},
    "PM-2": {"psi": 1.02, "omega2": 2.43, "omega3": 4.35},
    "FFSB-1 S": {"psi": 1.56, "omega2": 2.0, "omega3": 2.9},
    "FFSB-1 R": {"psi": 1.54, "omega2": 2.0, "omega3": 3.9},
    "FFSB-2 S": {"psi": 1.83, "omega2": 2.2, "omega3": 3.075},
    "FFSB-2 R": {"psi": 1.64, "omega2": 1.9, "omega3": 2.575},
}

#: Table 10: isolation throughputs (cmd/s) at the VM (blktrace): (reads, writes).
TABLE10_VM = {"file": (330.0, 237.0), "mail": (245.0, 370.0), "web": (470.0, 44.0)}
#: Table 10: the same at the storage server (tshark).
TABLE10_SAN = {"file": (198.0, 153.0), "mail": (245.0, 380.0), "web": (462.0, 53.0)}

#: Table 11: read statistics in isolation: mean response (ms) and mean arrival queue.
TABLE11 = {
    "file": {"resp_ms": 19.9, "aqueue": 9.57, "service_ms": 2.94, "batch": 5.07, "think_ms": 151.0},
    "mail": {"resp_ms": 17.3, "aqueue": 8.12, "service_ms": 2.66, "batch": 5.49, "think_ms": 149.0},
    "web": {"resp_ms": 11.8, "aqueue": 8.39, "service_ms": 1.58, "batch": 5.79, "think_ms": 141.0},
}

#: The consolidation mixes of §7, in the order of Tables 12-15, with their VMs' workloads.
MIXES = {
    "File+Mail": ("file", "mail"),
    "Web+File": ("web", "file"),
    "Web+Mail": ("web", "mail"),
    "Mail+Web+Mail": ("mail", "web", "mail"),
    "Mail+Web+Web": ("mail", "web", "web"),
    "Web+Web+File": ("web", "web", "file"),
    "Web+File+File": ("web", "file", "file"),
    "Mail+Mail+File": ("mail", "mail", "file"),
}

#: Table 12: measured consolidated per-VM (read, write) throughputs (cmd/s) and read/write
#: response times (ms), VMs in mix order.
TABLE12 = {
    "File+Mail": {"tput": ((198, 138), (95, 190)), "resp": ((35.0, 6.90), (45.5, 7.92))},
    "Web+File": {"tput": ((225, 18), (223, 158)), "resp": ((40.3, 9.45), (29.6, 7.19))},
    "Web+Mail": {"tput": ((250, 25), (132, 256)), "resp": ((33.0, 7.97), (28.0, 7.03))},
    "Mail+Web+Mail": {"tput": ((78, 155), (145, 24), (77, 167)), "resp": ((46.8, 12.3), (55.5, 12.0), (45.0, 13.0))},
    "Mail+Web+Web": {"tput": ((86, 159), (175, 27), (177, 22)), "resp": ((39.0, 13.5), (47.3, 12.0), (48.5, 13.3))},
    "Web+Web+File": {"tput": ((174, 16), (173, 20), (148, 96)), "resp": ((55.2, 15.5), (54.0, 16.1), (43.6, 16.7))},
    "Web+File+File": {"tput": ((155, 16), (125, 91), (133, 88)), "resp": ((63.4, 19.1), (49.8, 19.5), (51.0, 19.0))},
    "Mail+Mail+File": {"tput": ((81, 147), (78, 153), (146, 96)), "resp": ((54.9, 14.6), (54.9, 15.1), (45.4, 13.1))},
}

#: Table 13: read/write mix prediction errors (Δ_R, Δ_W).
TABLE13 = {
    "File+Mail": (0.03, 0.02),
    "Web+File": (0.03, 0.07),
    "Web+Mail": (0.09, 0.12),
    "Mail+Web+Mail": (0.20, 0.17),
    "Mail+Web+Web": (0.07, 0.16),
    "Web+Web+File": (0.01, 0.04),
    "Web+File+File": (0.01, 0.01),
    "Mail+Mail+File": (0.05, 0.04),
}

#: Table 14: throughput prediction errors: total (Δ_R, Δ_W), then per VM (Δ_R, Δ_W).
TABLE14 = {
    "File+Mail": ((0.02, 0.02), ((0.22, 0.19), (0.39, 0.10))),
    "Web+File": ((0.11, 0.16), ((0.01, 0.15), (0.21, 0.20))),
    "Web+Mail": ((0.09, 0.15), ((0.16, 0.20), (0.04, 0.34))),
    "Mail+Web+Mail": ((0.08, 0.19), ((0.07, 0.19), (0.04, 0.37), (0.15, 0.16))),
    "Mail+Web+Web": ((0.07, 0.20), ((0.03, 0.16), (0.09, 0.41), (0.10, 0.27))),
    "Web+Web+File": ((0.13, 0.14), ((0.15, 0.12), (0.04, 0.18), (0.21, 0.13))),
    "Web+File+File": ((0.09, 0.08), ((0.06, 0.11), (0.08, 0.09), (0.13, 0.06))),
    "Mail+Mail+File": ((0.10, 0.15), ((0.02, 0.15), (0.11, 0.09), (0.28, 0.22))),
}

#: Table 15: linear read response-time errors per VM (Δ_R; the write column needs isolation
#: write statistics the paper does not publish).
TABLE15_LIN_R = {
    "File+Mail": (0.01, 0.23),
    "Web+File": (0.25, 0.04),
    "Web+Mail": (0.19, 0.02),
    "Mail+Web+Mail": (0.15, 0.30, 0.12),
    "Mail+Web+Web": (0.17, 0.33, 0.35),
    "Web+Web+File": (0.32, 0.31, 0.12),
    "Web+File+File": (0.24, 0.02, 0.04),
    "Mail+Mail+File": (0.08, 0.08, 0.11),
}
