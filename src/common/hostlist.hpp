// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/hostlist.hpp
//
// Slurm's host list expressions ("node[1-3,7],login01"), without Slurm: the
// controller engine, the runner and `switch-lua simulate` read the node
// lists a script returns and the glue hands over (issue 20, per-node
// attribution), and write the ones they log and drain.
//
//   auto names = expand_hostlist("node[1-3],gpu[07-08]");
//   // {"node1", "node2", "node3", "gpu07", "gpu08"}
//   compress_hostlist(*names); // "node[1-3],gpu[07-08]"
//
// The syntax is Slurm's (hostlist_create() in src/common/hostlist.c, the
// rule's source): entries separated by commas (or white space) outside
// brackets; in an entry, each "[...]" holds numbers and ranges "a-b"
// separated by commas, and stands for each of them in turn (several
// brackets in one entry: every combination, leftmost slowest); a range
// whose lower bound has leading zeros ("01-10") keeps that width.
#pragma once

#include "common/expected.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace switchlua {

/// The most names one expression may expand to: above any node count
/// Slurm accepts (MAX_SLURM_NODES is 65533 in 24.11-26.05), so that
/// "n[0-999999999]" is refused, not expanded.
inline constexpr std::size_t kMaxHostlistNames = 1u << 17;

/// The names of `expr`, in its order, duplicates kept; empty entries
/// ("a,,b", a trailing comma) are skipped, as Slurm does, so "" and white
/// space alone are an empty list.  Errors (message starts "host list "):
/// an unbalanced or nested bracket, an empty bracket or range, a range
/// whose bound is not a decimal number (of at most 18 digits) or whose
/// upper bound is below its lower one, more than kMaxHostlistNames names.
Expected<std::vector<std::string>> expand_hostlist(std::string_view expr);

/// A host list expression for `names` (in their order): runs of names that
/// differ only in a trailing decimal number of the same width become one
/// bracket ("node1,node2,node3,node5" -> "node[1-3,5]"); other names stay
/// as they are.  expand_hostlist() of the result gives `names` back.  No
/// name may contain ',', '[' or ']' (Slurm's node names cannot).
std::string compress_hostlist(const std::vector<std::string> &names);

} // namespace switchlua
