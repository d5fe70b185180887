// Finding a request's socket and checking whether its peer closed it.
#include "http_client_watch.h"

#include <httplib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

namespace kiln::serve {
namespace {

bool endpoint(const sockaddr_storage &addr, socklen_t len, std::string &host, int &port) {
  char h[NI_MAXHOST], p[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr *>(&addr), len, h, sizeof h, p, sizeof p,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = h;
  port = std::atoi(p);
  return true;
}

} // namespace

ClientWatch::ClientWatch(const httplib::Request &req) {
  DIR *dir = opendir("/proc/self/fd");
  if (!dir)
    return;
  while (dirent *e = readdir(dir)) {
    char *end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (*end || end == e->d_name)
      continue;
    struct stat st;
    if (fstat(int(fd), &st) != 0 || !S_ISSOCK(st.st_mode))
      continue;
    sockaddr_storage peer{}, local{};
    socklen_t pl = sizeof peer, ll = sizeof local;
    if (getpeername(int(fd), reinterpret_cast<sockaddr *>(&peer), &pl) != 0 ||
        getsockname(int(fd), reinterpret_cast<sockaddr *>(&local), &ll) != 0)
      continue;
    std::string ph, lh;
    int pp = 0, lp = 0;
    if (endpoint(peer, pl, ph, pp) && endpoint(local, ll, lh, lp) && pp == req.remote_port && ph == req.remote_addr &&
        lp == req.local_port) {
      fd_ = int(fd);
      break;
    }
  }
  closedir(dir);
}

bool ClientWatch::gone() const {
  if (fd_ < 0)
    return false;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0)
    return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
    return true;
  if (p.revents & POLLIN) {
    // Readable: either the peer's FIN (recv gives 0) or bytes of a next, pipelined request.
    char c;
    ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }
  return false;
}

} // namespace kiln::serve
