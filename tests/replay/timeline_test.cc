// tenon timeline, checked in headless Chromium: the page needs no network, its script draws one
// marker per decision of the log and the node-count series, lists and labels the decisions that
// changed capacity, opens a moment given in the URL (#t=HH:MM:SS) with what changed around it, a
// window given in the URL shows exactly the decisions inside it, and a screenshot (kept in
// Testing/artifacts of the build) shows the drawn lines.
#include <sstream>

#include "tests/replay/incident.h"

namespace tenon::testing {
namespace {

const char* const kChromium = "/usr/bin/chromium";

// Runs headless Chromium (fresh profile, nothing fetched in the background) with `args`,
// returning what it prints on stdout.
std::string Chromium(const TempDir& dir, const std::string& args) {
  static int profiles = 0;
  const auto profile = dir.path() / ("profile-" + std::to_string(++profiles));
  const std::string command =
      std::string(kChromium) +
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
      " --disable-background-networking --disable-component-update --disable-sync"
      " --disable-extensions --user-data-dir=" +
      profile.string() + " " + args + " 2>/dev/null";
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

// The value of a data-NAME="..." attribute in the dumped DOM, or -1.
long Attribute(const std::string& dom, const std::string& name) {
  const std::string key = "data-" + name + "=\"";
  auto at = dom.find(key);
  return at == std::string::npos ? -1 : std::stol(dom.substr(at + key.size()));
}

// Decision times in seconds from the log's first Tick.
std::vector<double> DecisionSeconds(const log::EventLog& log) {
  Instant first;
  log.Scan(Seq{1}, Seq{0}, [&](const log::Record& r) {
    auto entry = log::DecodeEntry(r.payload);
    const auto* e = std::get_if<Event>(&entry);
    const auto* tick = e != nullptr ? std::get_if<Tick>(e) : nullptr;
    if (tick != nullptr) first = tick->now;
    return tick == nullptr;
  });
  std::vector<double> out;
  log.ScanDecisions(1, [&](const log::DecisionRecord& r) {
    out.push_back(static_cast<double>(log::DecodeDecision(r.payload).at.value - first.value) / 1e9);
    return true;
  });
  return out;
}

TEST(Timeline, RendersInHeadlessChromium) {
  ASSERT_TRUE(std::filesystem::exists(kChromium))
      << "chromium is not installed: scripts/setup installs it";
  auto run = RunKept(PdbScenario());
  TempDir dir;
  const auto page = dir.path() / "timeline.html";
  auto cli = Tenon("timeline " + run->log().string() + " -o " + page.string());
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  std::ifstream in(page);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Self-contained: nothing is fetched from anywhere.
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);

  auto log = run->Open();
  const auto seconds = DecisionSeconds(*log);
  ASSERT_GT(seconds.size(), 10u);
  const std::string url = "file://" + page.string();
  const std::string dom = Chromium(dir, "--dump-dom " + url);
  ASSERT_EQ(Attribute(dom, "rendered"), 1) << dom.substr(0, 2000);
  EXPECT_EQ(Attribute(dom, "markers-shown"), static_cast<long>(seconds.size()));
  // One on-demand NodePool: one series, drawn.
  EXPECT_EQ(Attribute(dom, "series"), 1);
  EXPECT_NE(dom.find("class=\"series\""), std::string::npos);
  EXPECT_NE(dom.find("class=\"cost\""), std::string::npos);
  EXPECT_NE(dom.find("of " + std::to_string(seconds.size()) + " decisions shown"),
            std::string::npos);
  // Hover text: each marker carries its decision's reason, e.g. the PDB that blocked a node.
  EXPECT_NE(dom.find("<title>"), std::string::npos);
  EXPECT_NE(dom.find("SingleNodeConsolidation executed"), std::string::npos);

  // The story beside the chart: the decisions that changed capacity are listed, each linked to
  // a labelled point, and the markers run in one lane per NodePool (and one for the rest).
  const long listed = Attribute(dom, "decisions-listed");
  EXPECT_GE(listed, 2) << "a launch and a consolidation at least";
  EXPECT_EQ(Attribute(dom, "labels-shown"), listed);
  EXPECT_NE(dom.find("<ol id=\"decisions\">"), std::string::npos);
  EXPECT_NE(dom.find("<li id=\"d-"), std::string::npos);
  EXPECT_NE(dom.find("class=\"decision-label\""), std::string::npos);
  EXPECT_NE(dom.find("data-item=\"d-"), std::string::npos);
  EXPECT_EQ(Attribute(dom, "lanes"), 2);  // default, and other.
  EXPECT_NE(dom.find(">default</text>"), std::string::npos);

  // #t=HH:MM:SS opens the moment: the ten minutes around the consolidation, and what changed.
  std::optional<Instant> executed;
  for (const auto& [at, d] : run->outcome.disruptions) {
    if (d.phase == DisruptionPhase::kExecuted && !executed) executed = at;
  }
  ASSERT_TRUE(executed.has_value());
  const std::string moment =
      Chromium(dir, "--dump-dom '" + url + "#t=" + ClockText(*executed) + "'");
  EXPECT_GE(Attribute(moment, "why-decisions"), 1) << moment.substr(0, 2000);
  const auto why = moment.find("<div id=\"why\"");
  ASSERT_NE(why, std::string::npos);
  EXPECT_NE(moment.find("SingleNodeConsolidation executed", why), std::string::npos);
  EXPECT_NE(moment.find("Around " + ClockText(*executed) + ": ", why), std::string::npos);

  // Zoomed to minutes 4 to 7: exactly the decisions in that window.
  const double from = 240, to = 420;
  const long inside =
      std::count_if(seconds.begin(), seconds.end(), [&](double s) { return s >= from && s <= to; });
  ASSERT_GT(inside, 0);
  ASSERT_LT(inside, static_cast<long>(seconds.size()));
  const std::string zoomed = Chromium(dir, "--dump-dom '" + url + "#from=240&to=420'");
  EXPECT_EQ(Attribute(zoomed, "markers-shown"), inside);

  // The screenshot: 1200x700, mostly white with the lines drawn in their colours.
  const auto shot = dir.path() / "timeline.png";
  Chromium(dir, "--window-size=1200,700 --screenshot=" + shot.string() + " " + url);
  ASSERT_TRUE(std::filesystem::exists(shot));
  EXPECT_GT(std::filesystem::file_size(shot), 10'000u);
  const std::string script =
      (std::filesystem::path(TENON_SOURCE_DIR) / "tests/replay/png_pixels.py").string();
  FILE* pipe = ::popen(("python3 " + script + " " + shot.string() + " 2b8a3e c92a2a").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  long width = 0, height = 0, nonwhite = 0, colors = 0, green = 0, red = 0;
  const int read = std::fscanf(pipe, "%ld %ld %ld %ld %ld %ld", &width, &height, &nonwhite, &colors,
                               &green, &red);
  ::pclose(pipe);
  ASSERT_EQ(read, 6);
  EXPECT_EQ(width, 1200);
  EXPECT_EQ(height, 700);
  EXPECT_GT(nonwhite, width * height / 100);  // More than 1% drawn: not a blank page.
  EXPECT_GT(colors, 20);
  EXPECT_GT(green, 200);  // The cost line.
  EXPECT_GT(red, 200);    // The pending-pods line.
  // Kept as the test's artifact, for a look at the page as drawn.
  const std::filesystem::path artifacts = TENON_ARTIFACT_DIR;
  std::filesystem::create_directories(artifacts);
  std::filesystem::copy_file(shot, artifacts / "timeline.png",
                             std::filesystem::copy_options::overwrite_existing);
  if (const char* keep = std::getenv("TENON_KEEP_SCREENSHOT")) {
    std::filesystem::copy_file(shot, keep, std::filesystem::copy_options::overwrite_existing);
  }
}

}  // namespace
}  // namespace tenon::testing
