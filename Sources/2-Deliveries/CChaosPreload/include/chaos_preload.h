#ifndef CHAOS_PRELOAD_H
#define CHAOS_PRELOAD_H

/// The preload library `chaos run` injects with LD_PRELOAD: a thin interposer over the
/// CChaosFaults engine. It loads its plan once, at load, from CHAOS_PLAN_TEXT (the plan
/// text) or CHAOS_PLAN (a plan file), see Docs/FaultPlan.md; the older CHAOS_PRELOAD_*
/// variables are translated into a plan while `chaos run` still writes them.

/// How many calls the library has answered with chaos since load (for tests and the tool).
unsigned long chaos_preload_chaotic_calls(void);

#endif
