//! The restart statuses in the mutating policy's CEL (SPEC §10, "Restart in
//! place"): `TANDEM_KEEP_ON_EXIT`'s value for a job container, written as the
//! webhook writes it (`inject::keep`, `ExitCodes`), and whether a changed Pod's
//! container may still be missing it.

/// `variables.restart`: the Pod's `restartPolicy` (the API server defaults it
/// to `Always`; the match conditions have turned such a Pod away).
pub const RESTART: &str = "has(object.spec.restartPolicy) ? object.spec.restartPolicy : 'Always'";

/// `TANDEM_KEEP_ON_EXIT`'s value for container `c`, written canonically as
/// `ExitCodes` writes it (`inject::keep` is the webhook's): from its own
/// `restartPolicy` or the Pod's, and with rules, the union of that and what
/// each rule selects, found by testing each status 0–255 once. The one-item
/// lists bind a value to a name (`[v].map(name, …)[0]`).
pub fn statuses(c: &str) -> String {
    let policy = format!("has({c}.restartPolicy) ? {c}.restartPolicy : variables.restart");
    let rules = |operator: &str| {
        format!(
            "{c}.restartPolicyRules.filter(r, has(r.exitCodes) &&\n          \
             r.exitCodes.operator == '{operator}')\n          \
             .map(r, has(r.exitCodes.values) ? r.exitCodes.values : [])"
        )
    };
    let (ins, outs) = (rules("In"), rules("NotIn"));
    let members = "lists.range(256).filter(x,\n          \
                   p == 'Always' || p == 'OnFailure' && x > 0 ||\n          \
                   x in ins || outs.exists(n, !(x in n)))";
    format!(
        "[{policy}].map(p,\n      \
         has({c}.restartPolicyRules) && size({c}.restartPolicyRules) > 0 ?\n      \
         [{ins}.flatten()].map(ins,\n        \
         [{outs}].map(outs,\n        \
         [{members}].map(m,\n        {})[0])[0])[0] :\n      \
         p == 'Always' ? '0-255' : p == 'OnFailure' ? '1-255' : '')[0]",
        written("m")
    )
}

/// The canonical writing of `m`, a list of statuses in ascending order: each
/// run of consecutive ones from where it starts (`s`, indices) to where it ends
/// (`e`), `A-B`, or `A` alone.
fn written(m: &str) -> String {
    format!(
        "[lists.range(size({m})).filter(i, i == 0 ? true : {m}[i - 1] + 1 != {m}[i])].map(s,\n        \
         [lists.range(size({m})).filter(i,\n          \
         i == size({m}) - 1 ? true : {m}[i] + 1 != {m}[i + 1])].map(e,\n        \
         lists.range(size(s)).map(k, s[k] == e[k] ? string({m}[s[k]]) :\n          \
         string({m}[s[k]]) + '-' + string({m}[e[k]])).join(','))[0])[0]"
    )
}

/// Whether container `c` may run again in place: its own or the Pod's
/// `restartPolicy` restarts it, or it has restart rules (a rule that selects no
/// status is the one case taken for more than it is: the patch then adds
/// nothing).
pub fn restarts(c: &str) -> String {
    format!(
        "((has({c}.restartPolicy) ? {c}.restartPolicy :\n        \
         has(object.spec.restartPolicy) ? object.spec.restartPolicy : '')\n        \
         in ['Always', 'OnFailure'] ||\n      \
         has({c}.restartPolicyRules) && size({c}.restartPolicyRules) > 0)"
    )
}
