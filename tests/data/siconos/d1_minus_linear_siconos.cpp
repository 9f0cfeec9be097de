// Siconos' D1MinusLinearOSI on two impactbench problems: writes the reference outputs
// BouncingBallD1MinusLinear.ref and PinInHoleD1MinusLinear.ref (see README.md in this folder).
//
// Debian's python3-siconos 4.4 does not wrap D1MinusLinearOSI, so this is C++ against the
// same Siconos 4.4 library (packages libsiconos-kernel-dev and libsiconos-numerics-dev):
//
//   g++ -O1 -std=c++17 -I/usr/include/siconos -I/usr/include/siconos/kernel \
//       -I/usr/include/siconos/numerics tests/data/siconos/d1_minus_linear_siconos.cpp \
//       -o /tmp/d1_minus_linear_siconos -lsiconos_kernel -lsiconos_numerics -lsiconos_externals
//   cd tests/data/siconos && /tmp/d1_minus_linear_siconos
//
// The simulation is set up as Siconos' own example BouncingBallTS-D1MinusLinearOSI.cpp
// (siconos-tutorials, examples/mechanics/BouncingBall): a TimeSteppingD1Minus with two LCPs,
// one at velocity level (impacts) and one at acceleration level (contact forces).
//
// * Ball: impactbench's BouncingBall(restitution=0.5): one DOF, mass 1, weight -9.81, gap
//   g(q) = q (LagrangianLinearTIR), q0 = 1, v0 = 0; h = 1e-3, T = 3, every step.
// * Pin in a hole: impactbench's TightJoint2D as studies/persistent_contact.py's "pin sliding in
//   hole" (stiffness 0, load (0, -1), no forcing, clearance 0.1, e = 0.5, q0 = (0, 0),
//   v0 = (0.4, -0.3)): M = I (LagrangianLinearTIDS), g(q) = 0.01 - |q|^2 written as a
//   LagrangianScleronomousR with its gradient and the time derivative of its gradient (the
//   curvature term of the acceleration-level LCP); h = 2e-3, T = 20, every 10th step.
//
// Rows: t, q, v (each number with %.17g: reads back as the same double); first line
// "rows cols".
#include "SiconosKernel.hpp"

#include <cstdio>
#include <vector>

namespace {

const double CLEARANCE = 0.1;

class PinInHole : public LagrangianScleronomousR {
 public:
  PinInHole() : LagrangianScleronomousR() {}
  void computeh(const BlockVector& q, BlockVector& z, SiconosVector& y) override {
    const double a = q.getValue(0), b = q.getValue(1);
    y.setValue(0, CLEARANCE * CLEARANCE - a * a - b * b);
  }
  void computeJachq(const BlockVector& q, BlockVector& z) override {
    _jachq->setValue(0, 0, -2.0 * q.getValue(0));
    _jachq->setValue(0, 1, -2.0 * q.getValue(1));
  }
  void computeDotJachq(const BlockVector& q, BlockVector& z, const BlockVector& qDot) override {
    _dotjachq->setValue(0, 0, -2.0 * qDot.getValue(0));
    _dotjachq->setValue(0, 1, -2.0 * qDot.getValue(1));
  }
  void initialize(Interaction& inter) override {
    LagrangianScleronomousR::initialize(inter);
    if (!_jachq) _jachq.reset(new SimpleMatrix(1, 2));
    if (!_dotjachq) _dotjachq.reset(new SimpleMatrix(1, 2));
  }
};

// Runs the D1MinusLinear time stepping of (body, relation) and writes every `every`-th step.
void run(const char* path, SP::LagrangianLinearTIDS body, SP::Relation relation, double e,
         double h, double t_end, int every) {
  const unsigned n = body->dimension();
  SP::Interaction inter(new Interaction(SP::NonSmoothLaw(new NewtonImpactNSL(e)), relation));
  SP::NonSmoothDynamicalSystem nsds(new NonSmoothDynamicalSystem(0.0, t_end));
  nsds->insertDynamicalSystem(body);
  nsds->link(inter, body);
  SP::TimeSteppingD1Minus simulation(
      new TimeSteppingD1Minus(nsds, SP::TimeDiscretisation(new TimeDiscretisation(0.0, h)), 2));
  simulation->insertIntegrator(SP::D1MinusLinearOSI(new D1MinusLinearOSI()));
  simulation->insertNonSmoothProblem(SP::OneStepNSProblem(new LCP()), SICONOS_OSNSP_TS_VELOCITY);
  simulation->insertNonSmoothProblem(SP::OneStepNSProblem(new LCP()),
                                     SICONOS_OSNSP_TS_VELOCITY + 1);
  SP::SiconosVector q = body->q(), v = body->velocity();
  std::vector<std::vector<double>> rows;
  auto record = [&](double t) {
    std::vector<double> row{t};
    for (unsigned j = 0; j < n; ++j) row.push_back((*q)(j));
    for (unsigned j = 0; j < n; ++j) row.push_back((*v)(j));
    rows.push_back(row);
  };
  record(0.0);
  long step = 0;
  while (simulation->hasNextEvent()) {
    simulation->advanceToEvent();
    if (++step % every == 0) record(simulation->nextTime());
    simulation->processEvents();
  }
  FILE* out = std::fopen(path, "w");
  std::fprintf(out, "%zu %u\n", rows.size(), 1 + 2 * n);
  for (const auto& row : rows) {
    for (std::size_t j = 0; j < row.size(); ++j)
      std::fprintf(out, j + 1 < row.size() ? "%.17g " : "%.17g\n", row[j]);
  }
  std::fclose(out);
  std::printf("wrote %s: %zu rows\n", path, rows.size());
}

}  // namespace

int main() {
  SP::SiconosMatrix unit(new SimpleMatrix(1, 1));
  (*unit)(0, 0) = 1.0;
  SP::LagrangianLinearTIDS ball(
      new LagrangianLinearTIDS(SP::SiconosVector(new SiconosVector(1, 1.0)),
                               SP::SiconosVector(new SiconosVector(1, 0.0)), unit));
  ball->setFExtPtr(SP::SiconosVector(new SiconosVector(1, -9.81)));
  SP::SimpleMatrix floor(new SimpleMatrix(1, 1));
  (*floor)(0, 0) = 1.0;
  run("BouncingBallD1MinusLinear.ref", ball, SP::Relation(new LagrangianLinearTIR(floor)), 0.5,
      1e-3, 3.0, 1);

  SP::SiconosMatrix identity(new SimpleMatrix(2, 2));
  (*identity)(0, 0) = 1.0;
  (*identity)(1, 1) = 1.0;
  SP::SiconosVector q0(new SiconosVector(2, 0.0));
  SP::SiconosVector v0(new SiconosVector(2));
  (*v0)(0) = 0.4;
  (*v0)(1) = -0.3;
  SP::LagrangianLinearTIDS pin(new LagrangianLinearTIDS(q0, v0, identity));
  SP::SiconosVector load(new SiconosVector(2, 0.0));
  (*load)(1) = -1.0;
  pin->setFExtPtr(load);
  run("PinInHoleD1MinusLinear.ref", pin, SP::Relation(new PinInHole()), 0.5, 2e-3, 20.0, 10);
  return 0;
}
