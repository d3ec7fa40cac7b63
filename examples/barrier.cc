// barrier: N processes meet at a wharf Group barrier, round after round.
//
//   barrier --rank 0 --members homa://127.0.0.1:4000,homa://127.0.0.1:4001 &
//   barrier --rank 1 --members homa://127.0.0.1:4000,homa://127.0.0.1:4001
//
// Every process gets the same member list and its own rank; it opens its
// endpoint at members[rank] and joins the group. Rank 0 coordinates: the
// others report to it, and it releases everyone once all have arrived. A
// member that never arrives makes the others' Barrier() fail with
// kDeadlineExceeded after --timeout; a dead coordinator gives kUnavailable.
//
// Prints "rank R passed round K" per round; exits 1 on the first failure,
// printing its Status (e.g. "DEADLINE_EXCEEDED: ...") to stderr.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "wharf/endpoint.h"
#include "wharf/group.h"

int main(int argc, char** argv) {
  CLI::App app{"barrier: run barrier rounds across a group of processes"};
  size_t rank = 0;
  std::vector<std::string> members;
  int rounds = 5;
  double timeout_s = 10;
  app.add_option("--rank", rank, "This process's index in --members")->required();
  app.add_option("--members", members, "Every member's address, in rank order (comma separated)")
      ->required()
      ->delimiter(',');
  app.add_option("--rounds", rounds, "Barrier rounds to run")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--timeout", timeout_s, "Seconds each round may take")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (rank >= members.size()) {
    std::fprintf(stderr, "barrier: --rank %zu is not an index into the %zu members\n", rank,
                 members.size());
    return 2;
  }

  auto endpoint = wharf::Endpoint::Open({.address = members[rank]});
  if (!endpoint.ok()) {
    std::fprintf(stderr, "rank %zu: %s\n", rank, endpoint.status().ToString().c_str());
    return 1;
  }
  auto group = wharf::Group::Join(**endpoint, members, rank);
  if (!group.ok()) {
    std::fprintf(stderr, "rank %zu: %s\n", rank, group.status().ToString().c_str());
    return 1;
  }
  std::printf("rank %zu of %zu at %s\n", rank, members.size(), (*endpoint)->address().c_str());
  std::fflush(stdout);

  auto timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(timeout_s));
  for (int round = 0; round < rounds; ++round) {
    // Blocks (driving this process's endpoint) until all members arrived.
    wharf::Status s = (*group)->Barrier(timeout);
    if (!s.ok()) {
      std::fprintf(stderr, "rank %zu: round %d: %s\n", rank, round, s.ToString().c_str());
      return 1;
    }
    std::printf("rank %zu passed round %d\n", rank, round);
    std::fflush(stdout);
  }
  // Rank 0 may still owe the last release to a member whose copy was lost;
  // driving the endpoint a little longer lets retransmissions finish.
  (void)(*endpoint)->Run(std::chrono::milliseconds(rank == 0 ? 200 : 0));
  return 0;
}
