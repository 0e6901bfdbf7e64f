#include "cli/bench_common.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace nucleus::cli {

void write_svg_plot(const std::string& path, const std::string& title, const std::string& x_label,
                    const std::vector<SvgSeries>& series, double marker_x, const std::string& marker_label, bool shared_y) {
  const double width = 720, height = 420, left = 70, right = 30, top = 50, bottom = 60;
  double x_min = 1e300, x_max = -1e300;
  for (const SvgSeries& s : series)
    for (const auto& [x, y] : s.points) {
      x_min = std::min(x_min, std::log2(std::max(x, 1e-9)));
      x_max = std::max(x_max, std::log2(std::max(x, 1e-9)));
    }
  if (x_max <= x_min) x_max = x_min + 1;
  auto px = [&](double x) { return left + (std::log2(std::max(x, 1e-9)) - x_min) / (x_max - x_min) * (width - left - right); };
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n"
      << "<text x='" << width / 2 << "' y='24' text-anchor='middle' font-size='15'>" << title << "</text>\n"
      << "<line x1='" << left << "' y1='" << height - bottom << "' x2='" << width - right << "' y2='" << height - bottom
      << "' stroke='black'/>\n<line x1='" << left << "' y1='" << top << "' x2='" << left << "' y2='" << height - bottom
      << "' stroke='black'/>\n<text x='" << width / 2 << "' y='" << height - 15 << "' text-anchor='middle'>" << x_label << "</text>\n";
  for (const auto& [x, y] : series.empty() ? std::vector<std::pair<double, double>>{} : series[0].points)
    svg << "<text x='" << px(x) << "' y='" << height - bottom + 18 << "' text-anchor='middle'>" << x << "</text>\n";
  int legend = 0;
  double all_max = 0;
  for (const SvgSeries& s : series)
    for (const auto& [x, y] : s.points) all_max = std::max(all_max, y);
  for (const SvgSeries& s : series) {
    double y_max = 0;
    for (const auto& [x, y] : s.points) y_max = std::max(y_max, y);
    if (shared_y) y_max = all_max;
    if (y_max <= 0) y_max = 1;
    auto py = [&](double y) { return height - bottom - y / y_max * (height - top - bottom); };
    svg << "<polyline fill='none' stroke='" << s.color << "' stroke-width='2' points='";
    for (const auto& [x, y] : s.points) svg << px(x) << "," << py(y) << " ";
    svg << "'/>\n";
    for (const auto& [x, y] : s.points)
      svg << "<circle cx='" << px(x) << "' cy='" << py(y) << "' r='3' fill='" << s.color << "'><title>" << s.name << ": " << y
          << "</title></circle>\n";
    svg << "<text x='" << left + 10 << "' y='" << top + 16 * legend++ << "' fill='" << s.color << "'>" << s.name
        << " (max " << y_max << ")</text>\n";
  }
  if (marker_x > 0)
    svg << "<line x1='" << px(marker_x) << "' y1='" << top << "' x2='" << px(marker_x) << "' y2='" << height - bottom
        << "' stroke='gray' stroke-dasharray='5,4'/>\n<text x='" << px(marker_x) + 4 << "' y='" << top + 50 << "' fill='gray'>"
        << marker_label << "</text>\n";
  svg << "</svg>\n";
  std::ofstream out(path);
  if (!out) throw Error(path + ": cannot write the plot");
  out << svg.str();
}

}  // namespace nucleus::cli
