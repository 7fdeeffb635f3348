// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: lua/node_names.hpp
//
// NodeNames: a job's expanded node list (JobArgs::node_names), shared by
// every copy of the job table and copied only when one of them changes it.
// The controller copies a job's table several times per event (the state
// machine's next state, the journal record, the call request) under
// Slurm's locks; with 10,000 names a copy was a fresh 320 KiB allocation,
// page faults included (issue 22: switch_p_job_start of a 10,000-node job
// took 33 times as long as one of 1,000).  A copy is now one reference
// count.
//
//   NodeNames n = {"node1", "node2"};
//   NodeNames m = n;        // shares n's list
//   m.push_back("node3");   // m gets a list of its own; n is unchanged
//
// Thread-safety: as std::vector's for one object; distinct copies may be
// read and changed from different threads (a shared list is never changed
// in place).
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace switchlua {

class NodeNames {
public:
  using value_type = std::string;
  using const_iterator = std::vector<std::string>::const_iterator;
  using iterator = const_iterator; ///< read-only: changes go through the members below
  using size_type = std::size_t;

  NodeNames() = default;
  NodeNames(std::initializer_list<std::string> names)
      : names_(std::make_shared<std::vector<std::string>>(names)) {}
  explicit NodeNames(std::vector<std::string> names)
      : names_(std::make_shared<std::vector<std::string>>(std::move(names))) {}

  /// The names, in order (an empty list when there are none).
  const std::vector<std::string> &list() const { return names_ ? *names_ : no_names(); }
  const_iterator begin() const { return list().begin(); }
  const_iterator end() const { return list().end(); }
  size_type size() const { return names_ ? names_->size() : 0; }
  bool empty() const { return size() == 0; }
  const std::string &operator[](size_type i) const { return (*names_)[i]; }

  void push_back(std::string name) { own().push_back(std::move(name)); }
  template <class... A> std::string &emplace_back(A &&...a) {
    return own().emplace_back(std::forward<A>(a)...);
  }
  void reserve(size_type n) { own().reserve(n); }
  void clear() { names_.reset(); }

  friend bool operator==(const NodeNames &a, const NodeNames &b) {
    return a.names_ == b.names_ || a.list() == b.list();
  }
  friend bool operator==(const NodeNames &a, const std::vector<std::string> &b) {
    return a.list() == b;
  }

private:
  static const std::vector<std::string> &no_names() {
    static const std::vector<std::string> none;
    return none;
  }
  /// The list, made this object's own first when it is shared.
  std::vector<std::string> &own() {
    if (!names_)
      names_ = std::make_shared<std::vector<std::string>>();
    else if (names_.use_count() > 1)
      names_ = std::make_shared<std::vector<std::string>>(*names_);
    return *names_;
  }

  std::shared_ptr<std::vector<std::string>> names_;
};

} // namespace switchlua
