// Tests for include/strideweave/carriers/file_backed.h: the FileBacked
// carrier (core-concepts.md 1.1-1.8, 2.1, 8.4; backend-capabilities.md,
// "Shipped carrier declarations are complete and sealed"; docs/storage.md).
//
// Suite names give the requirement: CoreConcepts_<section>_FileBacked*, and
// Storage_<topic> for the choices docs/storage.md writes down where the
// specification is silent (the residency window, open(), fault injection).
//
// Fault injection replaces the one I/O interface (file_io.h) with FaultyIo,
// which fails one named call with one errno; each test then checks the
// OSError's errno, file and offset, and that nothing was left half-done (no
// file left in the directory, no slot, version or window changed).
#include <strideweave/capability.h>
#include <strideweave/carriers/file_backed.h>
#include <strideweave/errors.h>
#include <strideweave/ops.h>
#include <strideweave/tensor.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sysio/system_io.h"

#include <fcntl.h>
#include "support/expect_exactly.h"

namespace sw = strideweave;
namespace fs = std::filesystem;
using sw::DType;
using sw::FileBacked;
using sw::Value;
using sw::sysio::ScopedSystemIo;
using FileIo = sw::sysio::SystemIo;

namespace {

Value F(float v) { return Value::from_float32(v); }
Value I(std::int32_t v) { return Value::from_int32(v); }

std::set<std::string> directory_listing(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string int32_bytes(const std::vector<std::int32_t>& values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// This process's resident bytes in the mappings of `file`: the Rss lines of
// /proc/self/smaps (pages mapped into the process, what MADV_DONTNEED drops).
std::int64_t resident_bytes_of(const fs::path& file) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  std::int64_t kib = 0;
  const std::string name = file.string();
  while (std::getline(smaps, line)) {
    // A mapping's header starts with its address range "start-end ".
    const std::string first = line.substr(0, line.find(' '));
    const bool header = first.find('-') != std::string::npos &&
                        first.find_first_not_of("0123456789abcdef-") == std::string::npos;
    if (header) {
      inside = line.size() >= name.size() && line.compare(line.size() - name.size(), name.size(), name) == 0;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      kib += std::stoll(line.substr(4));
    }
  }
  return kib * 1024;
}

// A SystemIo that fails one call (by name) with one errno, on its nth use
// (0: the first), and counts every call.
class FaultyIo : public FileIo {
 public:
  FaultyIo(std::string call, int error, int nth = 0) : call_(std::move(call)), error_(error), nth_(nth) {}

  int make_private_directory(std::string& t) noexcept override {
    return fail("make_private_directory") ? error_ : FileIo::make_private_directory(t);
  }
  int remove_directory(const std::string& p) noexcept override {
    return fail("remove_directory") ? error_ : FileIo::remove_directory(p);
  }
  // FileBacked's two opens: a fresh file (O_CREAT) and an existing one.
  int open(const std::string& p, int flags, unsigned mode, int& fd) noexcept override {
    return fail((flags & O_CREAT) ? "create_exclusive" : "open_existing") ? error_ : FileIo::open(p, flags, mode, fd);
  }
  int status(int fd, sw::sysio::FileStatus& s) noexcept override {
    return fail("file_size") ? error_ : FileIo::status(fd, s);
  }
  int reserve(int fd, std::int64_t b) noexcept override { return fail("reserve") ? error_ : FileIo::reserve(fd, b); }
  int map(int fd, std::int64_t o, std::size_t b, bool w, void*& a) noexcept override {
    return fail("map") ? error_ : FileIo::map(fd, o, b, w, a);
  }
  int unmap(void* a, std::size_t b) noexcept override { return fail("unmap") ? error_ : FileIo::unmap(a, b); }
  int drop_pages(void* a, std::size_t b) noexcept override {
    return fail("drop_pages") ? error_ : FileIo::drop_pages(a, b);
  }
  int sync_mapping(void* a, std::size_t b) noexcept override {
    return fail("sync") ? error_ : FileIo::sync_mapping(a, b);
  }
  int close(int fd) noexcept override {
    // A failed close still closes the descriptor (Linux), as here.
    if (fail("close")) {
      FileIo::close(fd);
      return error_;
    }
    return FileIo::close(fd);
  }
  int remove_file(const std::string& p) noexcept override {
    return fail("remove_file") ? error_ : FileIo::remove_file(p);
  }

  int calls(const std::string& call) const { return calls_.count(call) ? calls_.at(call) : 0; }
  void heal() { error_ = 0; }

 private:
  bool fail(const char* call) {
    const int n = calls_[call]++;
    return error_ != 0 && call_ == call && n == nth_;
  }
  std::string call_;
  int error_;
  int nth_;
  std::map<std::string, int> calls_;
};

// The OSError `statement` raises (a failure is recorded when it raises
// nothing or another type).
template <class F>
sw::OSError os_error_of(F&& statement) {
  try {
    statement();
  } catch (const sw::OSError& e) {
    EXPECT_ERROR_TYPE_IS(e, sw::OSError);
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "raised another error: " << e.what();
    return sw::OSError("", 0, "", std::nullopt);
  }
  ADD_FAILURE() << "raised nothing";
  return sw::OSError("", 0, "", std::nullopt);
}

// ---------------------------------------------------------------------------
// 8.4: FileBacked(filename=None, *, mutable=True, dtype): a raw file in a
// private per-process temporary directory.

TEST(CoreConcepts_8_4_FileBacked, GeneratedNameIsAUniqueFileInThePrivateDirectory) {
  auto a = FileBacked::create(std::nullopt, DType::Float32(), true, 3);
  auto b = FileBacked::create(std::nullopt, DType::Float32(), true, 3);
  EXPECT_NE(a->path(), b->path());
  EXPECT_EQ(a->path().parent_path(), FileBacked::session_directory());
  EXPECT_TRUE(fs::is_regular_file(a->path()));
  EXPECT_EQ(fs::file_size(a->path()), 12u);  // raw: 3 slots of 4 bytes, no header
  EXPECT_TRUE(a->owns_file());
}

TEST(CoreConcepts_8_4_FileBacked, DirectoryIsOwnerOnlyUnderTmpdirAndFilesAre0600) {
  auto c = FileBacked::create(std::nullopt, DType::Int32(), true, 1);
  const fs::path dir = FileBacked::session_directory();
  EXPECT_EQ(mode_of(dir), 0700u);
  EXPECT_EQ(mode_of(c->path()), 0600u);
  const char* tmpdir = std::getenv("TMPDIR");
  fs::path root = tmpdir && *tmpdir ? fs::path(tmpdir) : fs::path("/tmp");
  EXPECT_EQ(fs::weakly_canonical(dir.parent_path()), fs::weakly_canonical(root));
  EXPECT_EQ(dir.filename().string().rfind("strideweave-" + std::to_string(::getpid()) + "-", 0), 0u) << dir;
}

TEST(CoreConcepts_8_4_FileBacked, FilenameIsABareNameInTheDirectory) {
  auto c = FileBacked::create(std::string("weights-8-4.bin"), DType::Float32(), true, 2);
  EXPECT_EQ(c->path(), FileBacked::session_directory() / "weights-8-4.bin");
  c->release();
  EXPECT_FALSE(fs::exists(FileBacked::session_directory() / "weights-8-4.bin"));
}

TEST(CoreConcepts_8_4_FileBacked, PathComponentsAreAValueErrorAndCreateNothing) {
  const fs::path dir = FileBacked::session_directory();
  const auto before = directory_listing(dir);
  for (const char* name : {"a/b", "../escape.bin", "/tmp/abs.bin", ".", "..", "", "dir/"})
    EXPECT_THROW_EXACTLY(FileBacked::create(std::string(name), DType::Float32()), sw::ValueError) << name;
  EXPECT_THROW_EXACTLY(FileBacked::create(std::string("nul\0name", 8), DType::Float32()), sw::ValueError);
  EXPECT_EQ(directory_listing(dir), before);
  EXPECT_FALSE(fs::exists(dir.parent_path() / "escape.bin"));
}

TEST(CoreConcepts_8_4_FileBacked, ExistingNameIsRefusedWithoutTouchingThatFile) {
  const fs::path taken = FileBacked::session_directory() / "taken-8-4.bin";
  write_bytes(taken, "precious");
  ::chmod(taken.c_str(), 0640);
  const sw::OSError e = os_error_of([] { FileBacked::create(std::string("taken-8-4.bin"), DType::Int32(), true, 4); });
  EXPECT_EQ(e.error_number(), EEXIST);
  EXPECT_EQ(e.filename(), taken.string());
  EXPECT_NE(std::string(e.what()).find(taken.string()), std::string::npos) << e.what();
  EXPECT_EQ(read_bytes(taken), "precious");
  EXPECT_EQ(mode_of(taken), 0640u);
  fs::remove(taken);
}

TEST(CoreConcepts_8_4_FileBacked, ReleaseRemovesTheFileAndIsIdempotent) {
  auto c = FileBacked::create(std::nullopt, DType::Float32(), true, 5);
  const fs::path p = c->path();
  ASSERT_TRUE(fs::exists(p));
  c->release();
  EXPECT_FALSE(fs::exists(p));
  EXPECT_TRUE(c->is_released());
  c->release();  // 1.6: idempotent
  EXPECT_TRUE(c->is_released());
  EXPECT_EQ(c->path(), p);
}

TEST(CoreConcepts_8_4_FileBacked, DestructionRemovesTheFile) {
  fs::path p;
  {
    auto c = FileBacked::create(std::nullopt, DType::Float32(), true, 5);
    p = c->path();
  }
  EXPECT_FALSE(fs::exists(p));
}

TEST(CoreConcepts_8_4_FileBacked, ClosedToSubclassing) {
  // 1.8: shipped carriers are closed to subclassing (C++: final).
  EXPECT_TRUE(std::is_final_v<FileBacked>);
}

// ---------------------------------------------------------------------------
// 1.2 / 1.3: storage dtypes Float32 and Int32; zero-initialised.

TEST(CoreConcepts_1_3_FileBackedStorage, StoresFloat32AndInt32Only) {
  EXPECT_TRUE(FileBacked::supports(DType::Float32()));
  EXPECT_TRUE(FileBacked::supports(DType::Int32()));
  EXPECT_FALSE(FileBacked::supports(DType::Bool()));
  EXPECT_FALSE(FileBacked::supports(DType::Float64()));
  EXPECT_FALSE(FileBacked::supports(DType::Floating()));
  auto c = FileBacked::create(std::nullopt, DType::Float32());
  EXPECT_TRUE(c->supports_storage_dtype(DType::Int32()));  // state-independent
  EXPECT_FALSE(c->supports_storage_dtype(DType::Bool()));
}

TEST(CoreConcepts_1_2_FileBackedConstruction, UnsupportedDtypeIsAValueErrorAndCreatesNothing) {
  const auto before = directory_listing(FileBacked::session_directory());
  EXPECT_THROW_EXACTLY(FileBacked::create(std::nullopt, DType::Bool(), true, 3), sw::ValueError);
  EXPECT_THROW_EXACTLY(FileBacked::create(std::string("bool.bin"), DType::Bool(), true, 3), sw::ValueError);
  EXPECT_THROW_EXACTLY(FileBacked::create(std::nullopt, DType::Float64()), sw::ValueError);
  EXPECT_THROW_EXACTLY(FileBacked::create(std::nullopt, DType::Float32(), true, -1), sw::ValueError);
  EXPECT_THROW_EXACTLY(FileBacked::create(std::nullopt, DType::Float32(), true, std::int64_t{1} << 62),
                       sw::ValueError);
  EXPECT_THROW_EXACTLY(FileBacked::create(std::nullopt, DType::Float32(), true, 1, 0), sw::ValueError);
  EXPECT_EQ(directory_listing(FileBacked::session_directory()), before);
}

TEST(CoreConcepts_1_3_FileBackedStorage, SlotsReadAsZero) {
  auto f = FileBacked::create(std::nullopt, DType::Float32(), true, 1000);
  auto i = FileBacked::create(std::nullopt, DType::Int32(), true, 1000);
  for (std::int64_t k = 0; k < 1000; ++k) {
    EXPECT_EQ(f->get_value(k), F(0.0f));
    EXPECT_EQ(i->get_value(k), I(0));
  }
  EXPECT_EQ(f->size(), 1000);
  EXPECT_EQ(&f->dtype(), &DType::Float32());
  EXPECT_EQ(FileBacked::create(std::nullopt, DType::Float32())->size(), 0);
}

// ---------------------------------------------------------------------------
// 1.1 / 2.1: slot access and versions (carrier.h's contract).

TEST(CoreConcepts_1_1_FileBackedAccess, GetAndSetValuesAreStoredRawInTheFile) {
  auto c = FileBacked::create(std::nullopt, DType::Int32(), true, 4);
  c->set_value(0, I(7));
  c->set_value(3, I(-2));
  EXPECT_EQ(c->get_value(0), I(7));
  EXPECT_EQ((*c)[3], I(-2));
  EXPECT_EQ(read_bytes(c->path()), int32_bytes({7, 0, 0, -2}));  // the shared mapping is the file
}

TEST(CoreConcepts_1_1_FileBackedAccess, BadAccessRaisesAndChangesNothing) {
  auto c = FileBacked::from_values(std::vector<Value>{F(1), F(2)}, DType::Float32());
  EXPECT_THROW_EXACTLY(c->get_value(-1), sw::IndexError);
  EXPECT_THROW_EXACTLY(c->get_value(2), sw::IndexError);
  EXPECT_THROW_EXACTLY(c->set_value(2, F(0)), sw::IndexError);
  EXPECT_THROW_EXACTLY(c->set_value(0, I(3)), sw::TypeError);
  EXPECT_EQ(c->version(), 0u);
  EXPECT_EQ(c->get_value(0), F(1));
  auto frozen = FileBacked::from_values(std::vector<Value>{F(1)}, DType::Float32(), false);
  EXPECT_FALSE(frozen->is_mutable());
  EXPECT_THROW_EXACTLY(frozen->set_value(0, F(5)), sw::RuntimeError);
  EXPECT_EQ(frozen->get_value(0), F(1));
  EXPECT_EQ(frozen->version(), 0u);
}

TEST(CoreConcepts_2_1_FileBackedVersion, OnePerWriteNoneForAllocationConstructionOrRelease) {
  auto c = FileBacked::create(std::nullopt, DType::Float32(), true, 3);
  EXPECT_EQ(c->version(), 0u);
  c->set_value(1, F(1.5f));
  c->set_value(1, F(2.5f));
  EXPECT_EQ(c->version(), 2u);
  EXPECT_EQ(c->allocate_like(4)->version(), 0u);
  EXPECT_EQ(c->new_like(std::vector<Value>{F(1)})->version(), 0u);
  c->release();
  EXPECT_EQ(c->version(), 2u);
}

TEST(CoreConcepts_1_6_FileBackedRelease, AccessAfterReleaseIsARuntimeErrorWhileDtypeAndNewLikeWork) {
  auto c = FileBacked::create(std::nullopt, DType::Int32(), true, 3);
  c->release();
  EXPECT_THROW_EXACTLY(c->get_value(0), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(c->set_value(0, I(1)), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(c->size(), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(c->flush(), sw::RuntimeError);
  EXPECT_EQ(&c->dtype(), &DType::Int32());
  EXPECT_TRUE(c->supports_storage_dtype(DType::Float32()));
  auto fresh = c->new_like(std::vector<Value>{I(4), I(5)});
  EXPECT_EQ(fresh->get_value(1), I(5));
}

// ---------------------------------------------------------------------------
// 1.4: new_like / allocate_like give fresh FileBacked storage.

TEST(CoreConcepts_1_4_FileBackedLike, NewLikeIsAFreshFileOfTheSameClass) {
  auto proto = FileBacked::create(std::nullopt, DType::Float32(), true, 1, 1 << 16);
  auto made = proto->new_like(std::vector<Value>{F(1), F(2), F(3)});
  auto* fb = dynamic_cast<FileBacked*>(made.get());
  ASSERT_NE(fb, nullptr);
  EXPECT_EQ(made->exact_class(), sw::carrier_class<FileBacked>());
  EXPECT_NE(fb->path(), proto->path());
  EXPECT_EQ(fb->residency_bytes(), proto->residency_bytes());
  EXPECT_EQ(made->size(), 3);
  EXPECT_EQ(made->get_value(2), F(3));
  auto ints = proto->new_like(std::vector<Value>{I(9)}, false, &DType::Int32());
  EXPECT_EQ(&ints->dtype(), &DType::Int32());
  EXPECT_FALSE(ints->is_mutable());
  EXPECT_EQ(ints->get_value(0), I(9));  // an immutable result still receives its values
  EXPECT_THROW_EXACTLY(proto->new_like(std::vector<Value>{F(1)}, true, &DType::Bool()), sw::ValueError);
  EXPECT_THROW_EXACTLY(proto->new_like(std::vector<Value>{I(1)}), sw::TypeError);
}

TEST(CoreConcepts_1_4_FileBackedLike, AllocateLikeIsZeroedAlsoWhenEmpty) {
  auto proto = FileBacked::create(std::nullopt, DType::Int32());
  for (bool empty : {false, true}) {
    auto made = proto->allocate_like(64, true, nullptr, empty);
    EXPECT_EQ(made->size(), 64);
    for (std::int64_t k = 0; k < 64; ++k) EXPECT_EQ(made->get_value(k), I(0));
  }
  EXPECT_THROW_EXACTLY(proto->allocate_like(-1), sw::ValueError);
  EXPECT_THROW_EXACTLY(proto->allocate_like(1, true, &DType::Bool()), sw::ValueError);
}

// ---------------------------------------------------------------------------
// 8.4 and backend-capabilities.md: storage only, sealed empty.

TEST(CoreConcepts_8_4_FileBackedStorageOnly, CapabilitySetIsSealedEmpty) {
  EXPECT_TRUE(sw::capabilities_for_carrier_class(sw::carrier_class<FileBacked>()).empty());
  auto c = FileBacked::create(std::nullopt, DType::Float32(), true, 2);
  EXPECT_TRUE(c->operation_capabilities().empty());
  EXPECT_EQ(c->class_name(), "FileBacked");
  // A shipped class cannot be declared by the public registration.
  EXPECT_THROW_EXACTLY(sw::register_operation_capabilities(sw::carrier_class<FileBacked>(), {}), sw::TypeError);
  EXPECT_TRUE(sw::capabilities_for_carrier_class(sw::carrier_class<FileBacked>()).empty());
}

TEST(CoreConcepts_8_4_FileBackedStorageOnly, ComputationalDispatchIsANotImplementedErrorBeforeAnyWork) {
  auto c = FileBacked::from_values(std::vector<Value>{F(1), F(2)}, DType::Float32());
  const sw::Tensor t(c, sw::Shape{2});
  const auto before = directory_listing(FileBacked::session_directory());
  // UnsupportedOperationPlan is the NotImplementedError the gate raises
  // before allocating a result (no file is created).
  EXPECT_THROW_EXACTLY(sw::add(t, t), sw::UnsupportedOperationPlan);
  EXPECT_THROW_EXACTLY(sw::relu(t), sw::UnsupportedOperationPlan);
  try {
    sw::add(t, t);
  } catch (const sw::NotImplementedError&) {  // the hierarchy itself: a NotImplementedError
  }
  EXPECT_EQ(directory_listing(FileBacked::session_directory()), before);
  EXPECT_EQ(c->version(), 0u);
}

TEST(CoreConcepts_1_7_FileBackedScatter, CarrierScatterIsANotImplementedErrorAndWritesNothing) {
  auto c = FileBacked::create(std::nullopt, DType::Float32(), true, 4);
  auto source = FileBacked::from_values(std::vector<Value>{F(1), F(2)}, DType::Float32());
  const sw::Tensor onto(c, sw::Shape{4});
  const sw::Tensor from(source, sw::Shape{2});
  EXPECT_THROW_EXACTLY(c->scatter(from, onto, sw::Layout(sw::Shape{2}, sw::Stride{1})), sw::NotImplementedError);
  EXPECT_EQ(c->version(), 0u);
  EXPECT_EQ(c->get_value(0), F(0));
}

// ---------------------------------------------------------------------------
// Storage_Residency (docs/storage.md, "Windows and budget"): a file larger
// than the budget is read and written end to end with the process's resident
// pages of it bounded by one window (plus the kernel's read fault-around).

constexpr std::int64_t kFaultAround = 64 << 10;  // Linux's default fault_around_bytes

TEST(Storage_Residency, FileLargerThanTheBudgetRoundTripsWithBoundedResidency) {
  constexpr std::int64_t kBudget = 64 << 10;          // 64 KiB window
  constexpr std::int64_t kSlots = (std::int64_t{4} << 20) / 4;  // a 4 MiB file
  auto c = FileBacked::create(std::nullopt, DType::Int32(), true, kSlots, kBudget);
  ASSERT_EQ(c->residency_bytes(), kBudget);
  const std::int64_t per_window = kBudget / 4;
  std::int64_t peak = 0;
  for (std::int64_t k = 0; k < kSlots; ++k) {
    c->set_value(k, I(static_cast<std::int32_t>(k * 7 + 1)));
    if (k % per_window == per_window - 1) peak = std::max(peak, resident_bytes_of(c->path()));
  }
  for (std::int64_t k = 0; k < kSlots; ++k) {
    ASSERT_EQ(c->get_value(k), I(static_cast<std::int32_t>(k * 7 + 1))) << k;
    if (k % per_window == per_window - 1) peak = std::max(peak, resident_bytes_of(c->path()));
  }
  EXPECT_GT(peak, 0);
  EXPECT_LE(peak, kBudget + kFaultAround) << "resident bytes of a 4 MiB file with a 64 KiB window";
  // The writes are in the file (read back without the mapping).
  const std::string bytes = read_bytes(c->path());
  ASSERT_EQ(static_cast<std::int64_t>(bytes.size()), kSlots * 4);
  std::int32_t last = 0;
  std::memcpy(&last, bytes.data() + bytes.size() - 4, 4);
  EXPECT_EQ(last, static_cast<std::int32_t>((kSlots - 1) * 7 + 1));
  // Random access across windows.
  for (std::int64_t k : {kSlots - 1, std::int64_t{0}, kSlots / 2, std::int64_t{17}, kSlots - 2})
    EXPECT_EQ(c->get_value(k), I(static_cast<std::int32_t>(k * 7 + 1)));
  EXPECT_LE(resident_bytes_of(c->path()), kBudget + kFaultAround);
}

TEST(Storage_Residency, TheMeasurementSeesAWholeFileWindow) {
  // The check above can fail: with a window as large as the file nothing is
  // dropped and the whole file becomes resident.
  constexpr std::int64_t kBytes = std::int64_t{1} << 20;
  auto c = FileBacked::create(std::nullopt, DType::Int32(), true, kBytes / 4, kBytes);
  for (std::int64_t k = 0; k < kBytes / 4; ++k) c->set_value(k, I(1));
  EXPECT_EQ(resident_bytes_of(c->path()), kBytes);
}

TEST(Storage_Residency, BudgetRoundsUpToWholePagesAndDefaultsTo64MiB) {
  const std::int64_t page = ::sysconf(_SC_PAGESIZE);
  EXPECT_EQ(FileBacked::create(std::nullopt, DType::Float32(), true, 1, 1)->residency_bytes(), page);
  EXPECT_EQ(FileBacked::create(std::nullopt, DType::Float32(), true, 1, page + 1)->residency_bytes(), 2 * page);
  EXPECT_EQ(FileBacked::create(std::nullopt, DType::Float32())->residency_bytes(), std::int64_t{64} << 20);
}

TEST(Storage_Residency, ConcurrentReadersAcrossWindowsSeeTheirValues) {
  constexpr std::int64_t kSlots = 1 << 16;  // 256 KiB, 16 KiB windows
  auto c = FileBacked::create(std::nullopt, DType::Int32(), true, kSlots, 16 << 10);
  for (std::int64_t k = 0; k < kSlots; ++k) c->set_value(k, I(static_cast<std::int32_t>(k)));
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&, t] {
      for (std::int64_t k = t; k < kSlots; k += 4)
        if (c->get_value((k * 4099) % kSlots) != I(static_cast<std::int32_t>((k * 4099) % kSlots))) ++wrong;
    });
  for (auto& r : readers) r.join();
  EXPECT_EQ(wrong.load(), 0);
}

// ---------------------------------------------------------------------------
// Storage_Open (docs/storage.md, "Opening a file you have"): open() maps an
// existing file, read-only unless asked, and never deletes it.

class Storage_Open : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strideweave-open-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    file_ = dir_ / "data.bin";
    // A 16-byte header, then six Int32 slots.
    write_bytes(file_, std::string("HEADER-16-BYTES!") + int32_bytes({1, 2, 3, 4, 5, 6}));
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_, file_;
};

TEST_F(Storage_Open, MapsTheSlotsAfterAnOffsetReadOnlyAndNeverDeletes) {
  const std::string original = read_bytes(file_);
  auto c = FileBacked::open(file_, DType::Int32(), false, 16);
  EXPECT_FALSE(c->owns_file());
  EXPECT_EQ(c->path(), file_);
  EXPECT_EQ(c->size(), 6);
  EXPECT_EQ(c->get_value(0), I(1));
  EXPECT_EQ(c->get_value(5), I(6));
  EXPECT_FALSE(c->is_mutable());
  EXPECT_THROW_EXACTLY(c->set_value(0, I(9)), sw::RuntimeError);
  c->release();
  EXPECT_EQ(read_bytes(file_), original);
  auto two = FileBacked::open(file_, DType::Int32(), false, 20, 2);
  EXPECT_EQ(two->size(), 2);
  EXPECT_EQ(two->get_value(1), I(3));
  two.reset();
  EXPECT_EQ(read_bytes(file_), original);
}

TEST_F(Storage_Open, ReadOnlyPermissionsSufficeForAnImmutableOpen) {
  ::chmod(file_.c_str(), 0400);
  auto c = FileBacked::open(file_, DType::Int32(), false, 16);
  EXPECT_EQ(c->get_value(2), I(3));
}

TEST_F(Storage_Open, MutableOpenWritesThroughToTheUsersFile) {
  auto c = FileBacked::open(file_, DType::Int32(), true, 16);
  c->set_value(1, I(-20));
  c->flush();
  EXPECT_EQ(c->version(), 1u);
  c->release();
  const std::string bytes = read_bytes(file_);
  EXPECT_EQ(bytes.substr(0, 16), "HEADER-16-BYTES!");
  EXPECT_EQ(bytes.substr(16), int32_bytes({1, -20, 3, 4, 5, 6}));
}

TEST_F(Storage_Open, BadRangesAreValueErrorsAndAMissingFileAnOSError) {
  EXPECT_THROW_EXACTLY(FileBacked::open(file_, DType::Int32(), false, 2), sw::ValueError);      // not slot-aligned
  EXPECT_THROW_EXACTLY(FileBacked::open(file_, DType::Int32(), false, -4), sw::ValueError);
  EXPECT_THROW_EXACTLY(FileBacked::open(file_, DType::Int32(), false, 16, 7), sw::ValueError);  // past the end
  EXPECT_THROW_EXACTLY(FileBacked::open(file_, DType::Int32(), false, 44), sw::ValueError);     // past the end
  write_bytes(file_, "abcdefg");  // 7 bytes: not whole slots
  EXPECT_THROW_EXACTLY(FileBacked::open(file_, DType::Float32()), sw::ValueError);
  EXPECT_EQ(FileBacked::open(file_, DType::Float32(), false, 0, 1)->size(), 1);
  EXPECT_THROW_EXACTLY(FileBacked::open(file_, DType::Bool()), sw::ValueError);
  const sw::OSError e = os_error_of([&] { FileBacked::open(dir_ / "missing.bin", DType::Float32()); });
  EXPECT_EQ(e.error_number(), ENOENT);
  EXPECT_EQ(e.filename(), (dir_ / "missing.bin").string());
}

TEST_F(Storage_Open, NewLikeFromAnOpenedPrototypeIsAFreshTemporaryFile) {
  auto c = FileBacked::open(file_, DType::Int32(), false, 16);
  auto made = c->new_like(std::vector<Value>{I(1)});
  auto* fb = dynamic_cast<FileBacked*>(made.get());
  ASSERT_NE(fb, nullptr);
  EXPECT_TRUE(fb->owns_file());
  EXPECT_EQ(fb->path().parent_path(), FileBacked::session_directory());
}

// ---------------------------------------------------------------------------
// Storage_FaultInjection (docs/storage.md, "Errors"): each FileBacked call
// site fails as the kernel would; the error is an OSError naming the file and
// offset, and nothing is left half-done.

TEST(Storage_FaultInjection, CreationFailureLeavesNoFile) {
  const fs::path dir = FileBacked::session_directory();
  const auto before = directory_listing(dir);
  FaultyIo io("create_exclusive", EACCES);
  ScopedSystemIo scope(io);
  const sw::OSError e = os_error_of([] { FileBacked::create(std::string("denied.bin"), DType::Float32(), true, 4); });
  EXPECT_EQ(e.error_number(), EACCES);
  EXPECT_EQ(e.filename(), (dir / "denied.bin").string());
  EXPECT_EQ(directory_listing(dir), before);
}

TEST(Storage_FaultInjection, ReservationFailureIsENOSPCAtOffsetZeroAndRemovesTheFile) {
  const fs::path dir = FileBacked::session_directory();
  const auto before = directory_listing(dir);
  for (int error : {ENOSPC, EIO, EFBIG}) {
    FaultyIo io("reserve", error);
    ScopedSystemIo scope(io);
    const sw::OSError e = os_error_of([] { FileBacked::create(std::string("full.bin"), DType::Int32(), true, 1024); });
    EXPECT_EQ(e.error_number(), error);
    EXPECT_EQ(e.filename(), (dir / "full.bin").string());
    ASSERT_TRUE(e.offset().has_value());
    EXPECT_EQ(*e.offset(), 0);
    EXPECT_NE(std::string(e.what()).find("posix_fallocate of 4096 bytes"), std::string::npos) << e.what();
    EXPECT_EQ(directory_listing(dir), before);
    EXPECT_EQ(io.calls("close"), 1);  // the descriptor is not leaked
  }
}

TEST(Storage_FaultInjection, MappingFailureRemovesTheFile) {
  const fs::path dir = FileBacked::session_directory();
  const auto before = directory_listing(dir);
  FaultyIo io("map", ENOMEM);
  ScopedSystemIo scope(io);
  const sw::OSError e = os_error_of([] { FileBacked::create(std::nullopt, DType::Float32(), true, 10); });
  EXPECT_EQ(e.error_number(), ENOMEM);
  EXPECT_EQ(fs::path(e.filename()).parent_path(), dir);
  EXPECT_EQ(e.offset(), std::optional<std::int64_t>(0));
  EXPECT_EQ(directory_listing(dir), before);
}

TEST(Storage_FaultInjection, CloseFailureUnmapsAndRemovesTheFile) {
  const fs::path dir = FileBacked::session_directory();
  const auto before = directory_listing(dir);
  FaultyIo io("close", EIO);
  ScopedSystemIo scope(io);
  const sw::OSError e = os_error_of([] { FileBacked::create(std::nullopt, DType::Float32(), true, 10); });
  EXPECT_EQ(e.error_number(), EIO);
  EXPECT_EQ(io.calls("unmap"), 1);
  EXPECT_EQ(directory_listing(dir), before);
}

TEST(Storage_FaultInjection, OpenFailuresNameTheFileAndLeaveItAlone) {
  const fs::path file = FileBacked::session_directory() / "user-open.bin";
  write_bytes(file, int32_bytes({1, 2}));
  for (const char* call : {"open_existing", "file_size", "map"}) {
    FaultyIo io(call, EIO);
    ScopedSystemIo scope(io);
    const sw::OSError e = os_error_of([&] { FileBacked::open(file, DType::Int32(), true); });
    EXPECT_EQ(e.error_number(), EIO) << call;
    EXPECT_EQ(e.filename(), file.string()) << call;
    EXPECT_EQ(io.calls("close"), std::string(call) == "open_existing" ? 0 : 1) << call;
    EXPECT_EQ(io.calls("unmap"), 0) << call;
    EXPECT_EQ(read_bytes(file), int32_bytes({1, 2})) << call;
  }
  fs::remove(file);
}

TEST(Storage_FaultInjection, WindowMoveFailureChangesNoSlotVersionOrWindow) {
  const std::int64_t page = ::sysconf(_SC_PAGESIZE);
  const std::int64_t per_window = page / 4;
  auto c = FileBacked::create(std::nullopt, DType::Int32(), true, 4 * per_window, page);
  c->set_value(0, I(5));  // the window is now [0, page)
  {
    FaultyIo io("drop_pages", EIO);
    ScopedSystemIo scope(io);
    const sw::OSError e = os_error_of([&] { c->set_value(2 * per_window, I(9)); });
    EXPECT_EQ(e.error_number(), EIO);
    EXPECT_EQ(e.filename(), c->path().string());
    EXPECT_EQ(e.offset(), std::optional<std::int64_t>(0));  // the window whose pages could not be dropped
    EXPECT_EQ(c->version(), 1u);
    // The window did not move: an access inside it needs no drop.
    EXPECT_EQ(c->get_value(1), I(0));
    EXPECT_EQ(io.calls("drop_pages"), 1);
    // The fault was once: the next move drops the window and goes on.
    EXPECT_EQ(c->get_value(3 * per_window), I(0));
    EXPECT_EQ(io.calls("drop_pages"), 2);
  }
  EXPECT_EQ(c->get_value(2 * per_window), I(0));  // nothing was written there
  EXPECT_EQ(c->get_value(0), I(5));
}

TEST(Storage_FaultInjection, FlushFailureIsAnOSErrorAndTheCarrierStaysUsable) {
  auto c = FileBacked::create(std::nullopt, DType::Float32(), true, 8);
  c->set_value(3, F(2.0f));
  FaultyIo io("sync", EIO);
  ScopedSystemIo scope(io);
  const sw::OSError e = os_error_of([&] { c->flush(); });
  EXPECT_EQ(e.error_number(), EIO);
  EXPECT_EQ(e.filename(), c->path().string());
  EXPECT_EQ(e.offset(), std::optional<std::int64_t>(0));
  EXPECT_EQ(c->get_value(3), F(2.0f));
  EXPECT_EQ(c->version(), 1u);
  c->flush();  // the fault was once: the retry succeeds
}

TEST(Storage_FaultInjection, ReleaseIgnoresCleanupFailuresAndCompletes) {
  auto c = FileBacked::create(std::nullopt, DType::Float32(), true, 8);
  const fs::path p = c->path();
  {
    FaultyIo io("remove_file", EIO);
    ScopedSystemIo scope(io);
    c->release();  // release is permanent and never throws
  }
  EXPECT_TRUE(c->is_released());
  EXPECT_TRUE(fs::exists(p));  // the failed unlink left it; the exit hook removes the directory
  fs::remove(p);
}

// ---------------------------------------------------------------------------
// Per-process directory: a forked child has its own, removed at its exit,
// and never removes its parent's files.

TEST(CoreConcepts_8_4_FileBackedProcess, AForkedChildHasItsOwnDirectoryRemovedAtExit) {
  GTEST_FLAG_SET(death_test_style, "fast");
  auto parent_file = FileBacked::create(std::nullopt, DType::Float32(), true, 2);
  const fs::path report = fs::temp_directory_path() / ("strideweave-child-" + std::to_string(::getpid()));
  EXPECT_EXIT(
      {
        // The parent's carrier, released in the child, leaves the parent's file.
        parent_file->release();
        auto mine = FileBacked::create(std::nullopt, DType::Float32(), true, 2);
        std::ofstream(report) << FileBacked::session_directory().string();
        std::exit(mine->path().parent_path() != parent_file->path().parent_path() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_TRUE(fs::exists(parent_file->path()));
  const std::string child_dir = read_bytes(report);
  fs::remove(report);
  ASSERT_FALSE(child_dir.empty());
  EXPECT_NE(fs::path(child_dir), FileBacked::session_directory());
  EXPECT_FALSE(fs::exists(child_dir)) << "the child's directory outlived it";
}

TEST(Storage_FaultInjection, DirectoryCreationFailureIsAnOSErrorNamingTheRoot) {
  GTEST_FLAG_SET(death_test_style, "fast");
  // Only a process's first FileBacked creates the directory: a forked child
  // (a new process) is that first use.
  EXPECT_EXIT(
      {
        FaultyIo io("make_private_directory", EACCES);
        ScopedSystemIo scope(io);
        bool ok = false;
        try {
          FileBacked::create(std::nullopt, DType::Float32(), true, 1);
        } catch (const sw::OSError& e) {
          ok = e.error_number() == EACCES && std::string(e.filename()).find("strideweave-") != std::string::npos;
        }
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace

// ---------------------------------------------------------------------------
// Storage_FileBackedChecksums (docs/storage.md, "Checksums"): a region that
// changed behind the carrier while the window was elsewhere is an OSError
// (EBADMSG) naming the file and the region's offset before any slot of it is
// used; nothing changes.

TEST(Storage_FileBackedChecksums, ARegionChangedBehindTheCarrierIsRefusedBeforeUse) {
  const std::int64_t window = 4096;
  auto c = FileBacked::create(std::nullopt, DType::Float32(), true, 3 * window / 4, window, true);
  EXPECT_TRUE(c->checksums());
  c->set_value(1, F(2));
  c->set_value(window / 4, F(3));  // the window leaves region 0: its hash is recorded
  {
    const int fd = ::open(c->path().c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    const float bad = 99.0f;
    ASSERT_EQ(::pwrite(fd, &bad, sizeof bad, 4), static_cast<ssize_t>(sizeof bad));
    ::close(fd);
  }
  try {
    c->get_value(1);
    ADD_FAILURE() << "a changed region was read";
  } catch (const sw::OSError& e) {
    EXPECT_EQ(e.error_number(), EBADMSG);
    EXPECT_EQ(e.filename(), c->path().string());
    EXPECT_EQ(e.offset(), 0);
  }
  EXPECT_THROW_EXACTLY(c->set_value(0, F(1)), sw::OSError);
  EXPECT_EQ(c->version(), 2u);
  EXPECT_EQ(c->get_value(window / 4), F(3));  // another region verifies
  // Without checksums the same change is read as a value.
  auto plain = FileBacked::create(std::nullopt, DType::Float32(), true, 2 * window / 4, window);
  plain->set_value(1, F(2));
  plain->set_value(window / 4, F(3));
  const int fd = ::open(plain->path().c_str(), O_WRONLY);
  const float bad = 99.0f;
  ASSERT_EQ(::pwrite(fd, &bad, sizeof bad, 4), static_cast<ssize_t>(sizeof bad));
  ::close(fd);
  EXPECT_EQ(plain->get_value(1), F(99.0f));
}

TEST(Storage_FileBackedChecksums, NewLikeKeepsTheChoice) {
  auto c = FileBacked::create(std::nullopt, DType::Int32(), true, 4, 4096, true);
  EXPECT_TRUE(std::static_pointer_cast<FileBacked>(c->allocate_like(4))->checksums());
  EXPECT_FALSE(FileBacked::create(std::nullopt, DType::Int32(), true, 4)->checksums());
}
