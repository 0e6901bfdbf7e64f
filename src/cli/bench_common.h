// Small helpers shared by the bench commands: a dependency-free SVG line plot.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace nucleus::cli {

struct SvgSeries {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;  // (x, y); each series scaled to its own y range
};

// Log2 x axis; each series is drawn against its own y range (labelled at its max). `marker_x`
// (when > 0) draws a dashed vertical line labelled `marker_label`; shared_y puts every series on
// one y range (for series that must be compared). Throws Error on write failure.
void write_svg_plot(const std::string& path, const std::string& title, const std::string& x_label,
                    const std::vector<SvgSeries>& series, double marker_x, const std::string& marker_label,
                    bool shared_y = false);

}  // namespace nucleus::cli
