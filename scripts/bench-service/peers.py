"""The servers the benchmark compares, and the origin they all fetch from: how each is configured and started,
and which path asks it for the 256x256 centre crop (Q80) of a source photo.

Every target here is started by bench.py on free loopback ports, from configs written under the run's work
folder, and stopped when its cases are done. A target belongs to a group, the name ONLY= picks it by:

  group        target             cases                    what
  thumbor      thumbor            cold overload quality    thumbor 7.8 --processes=2, http loader, no storages
  thumbor      thumbor-rs         hot                      the same with thumbor's file result storage
  imagefilter  imagefilter        cold overload quality    nginx + image_filter (libgd), proxy_pass to origin
  imagefilter  imagefilter-cache  hot                      the same behind nginx proxy_cache
  vips         vips               cold hot overload quality  vips_server.py (pyvips thumbnail_buffer)
  static       static             hot quality              nginx serving 20 ready thumbnails (the hot limit)
  service      service            cold hot overload quality  $IMAGE_SERVICE_BIN (thumbor URL syntax)
"""
import os
import re
import shutil

from procs import free_port, wait_http

HERE = os.path.dirname(os.path.abspath(__file__))
NGINX_MODULES = "/usr/lib/nginx/modules"


def nginx_conf(prefix, workers, servers, image_filter=False, http_extra=""):
    """An nginx config of its own: foreground (the PID bench.py holds is the master), every path under
    prefix, logs off, sendfile on; the rest (keep-alive, buffers) are Debian's defaults."""
    load = f"load_module {NGINX_MODULES}/ngx_http_image_filter_module.so;\n" if image_filter else ""
    # A master started as root hands its workers to 'nobody', who may not read the work folder.
    user = "user root root;\n" if os.geteuid() == 0 else ""
    temp = " ".join(f"{k}_temp_path {prefix}/tmp/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return f"""{load}{user}daemon off;
worker_processes {workers};
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    types {{ image/jpeg jpg; }}
    default_type application/octet-stream;
    {temp}
{http_extra}{servers}}}
"""


HEALTHZ = '        location = /healthz { return 200 "ok\\n"; }\n'


class Context:
    """What every target needs: the run's processes and folders, the origin's port, the tools."""

    def __init__(self, processes, rundir, images, thumbs, python, service_bin, service_cache):
        self.processes = processes
        self.rundir = rundir
        self.images = os.path.abspath(images)
        self.thumbs = os.path.abspath(thumbs)
        self.python = python
        self.service_bin = service_bin
        self.service_cache = service_cache
        self.origin_port = None


def start_nginx(ctx, name, conf_text, health_port):
    prefix = os.path.join(ctx.rundir, name)
    shutil.rmtree(prefix, ignore_errors=True)
    os.makedirs(os.path.join(prefix, "tmp"))
    conf = os.path.join(prefix, "nginx.conf")
    with open(conf, "w") as f:
        f.write(conf_text.replace("{prefix}", prefix))
    process = ctx.processes.start(name, ["nginx", "-p", prefix, "-c", conf, "-e", os.path.join(prefix, "error.log")])
    wait_http(f"http://127.0.0.1:{health_port}/healthz", process)
    return process


def start_origin(ctx):
    """The origin every peer fetches from: nginx, one worker, the 200 photos. /oK/img-NNN.jpg is the same file
    as /img-NNN.jpg under another URL, so a case can ask for the same bytes without hitting a result cache."""
    port = free_port()
    server = f"""    server {{
        listen 127.0.0.1:{port};
        root {ctx.images};
{HEALTHZ}        location ~ ^/o[0-9]+/(.+)$ {{ try_files /$1 =404; }}
    }}
"""
    start_nginx(ctx, "origin", nginx_conf("{prefix}", 1, server), port)
    ctx.origin_port = port
    return port


class Target:
    name = ""
    group = ""
    cases = ()

    def start(self, ctx):
        """Starts the server(s); sets self.base ('http://127.0.0.1:PORT') and self.roots (PIDs whose process
        trees are this target's memory)."""
        raise NotImplementedError

    def path(self, ctx, source_path):
        """The request path for the thumbnail of origin's source_path (e.g. '/img-001.jpg')."""
        return source_path

    def describe(self, ctx):
        return self.name


def thumbor_path(ctx, source_path):
    return f"/unsafe/256x256/filters:quality(80)/127.0.0.1:{ctx.origin_port}{source_path}"


class Thumbor(Target):
    group = "thumbor"

    def __init__(self, result_storage):
        self.result_storage = result_storage
        self.name = "thumbor-rs" if result_storage else "thumbor"
        self.cases = ("hot",) if result_storage else ("cold", "overload", "quality")

    def start(self, ctx):
        folder = os.path.join(ctx.rundir, self.name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        conf = os.path.join(folder, "thumbor.conf")
        # The curl client: thumbor's own recommendation for production, and why pycurl is installed.
        lines = [
            "LOADER = 'thumbor.loaders.http_loader'",
            "HTTP_LOADER_CURL_ASYNC_HTTP_CLIENT = True",
            "STORAGE = 'thumbor.storages.no_storage'",
            "ALLOW_UNSAFE_URL = True",
            "QUALITY = 80",
        ]
        if self.result_storage:
            lines += [
                "RESULT_STORAGE = 'thumbor.result_storages.file_storage'",
                f"RESULT_STORAGE_FILE_STORAGE_ROOT_PATH = {os.path.join(folder, 'result-storage')!r}",
                "RESULT_STORAGE_STORES_UNSAFE = True",
            ]
        else:
            lines.append("RESULT_STORAGE = None")
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        port = free_port()
        thumbor = os.path.join(os.path.dirname(ctx.python), "thumbor")
        process = ctx.processes.start(
            self.name, [thumbor, "--ip", "127.0.0.1", "--port", str(port), "--conf", conf, "--processes", "2"])
        self.base = f"http://127.0.0.1:{port}"
        wait_http(self.base + "/healthcheck", process)
        self.roots = [process.pid]

    def path(self, ctx, source_path):
        return thumbor_path(ctx, source_path)

    def describe(self, ctx):
        storage = "file result storage" if self.result_storage else "no storage, no result storage"
        return f"thumbor --processes=2, curl http loader, {storage}"


IMAGE_FILTER = """            image_filter crop 256 256;
            image_filter_jpeg_quality 80;
            image_filter_buffer 32M;
"""


class ImageFilter(Target):
    group = "imagefilter"

    def __init__(self, cache):
        self.cache = cache
        self.name = "imagefilter-cache" if cache else "imagefilter"
        self.cases = ("hot",) if cache else ("cold", "overload", "quality")

    def start(self, ctx):
        port = free_port()
        filtering = f"""    server {{
        listen 127.0.0.1:{{filter_port}};
{HEALTHZ}        location / {{
            proxy_pass http://127.0.0.1:{ctx.origin_port};
{IMAGE_FILTER}        }}
    }}
"""
        if not self.cache:
            conf = nginx_conf("{prefix}", 2, filtering.replace("{filter_port}", str(port)), image_filter=True)
        else:
            # The usual deployment: a caching server in front of the filtering one, in one nginx.
            back = free_port()
            front = f"""    server {{
        listen 127.0.0.1:{port};
{HEALTHZ}        location / {{
            proxy_pass http://127.0.0.1:{back};
            proxy_cache thumbs;
            proxy_cache_valid 200 1h;
        }}
    }}
"""
            cache = "    proxy_cache_path {prefix}/cache levels=1:2 keys_zone=thumbs:10m max_size=1g inactive=1h use_temp_path=off;\n"
            conf = nginx_conf("{prefix}", 2, front + filtering.replace("{filter_port}", str(back)),
                              image_filter=True, http_extra=cache)
        process = start_nginx(ctx, self.name, conf, port)
        self.base = f"http://127.0.0.1:{port}"
        self.roots = [process.pid]

    def describe(self, ctx):
        how = "behind proxy_cache" if self.cache else "no cache"
        return f"nginx + image_filter (libgd), 2 workers, {how}"


class Static(Target):
    name = "static"
    group = "static"
    cases = ("hot", "quality")

    def start(self, ctx):
        port = free_port()
        server = f"""    server {{
        listen 127.0.0.1:{port};
        root {ctx.thumbs};
{HEALTHZ}    }}
"""
        process = start_nginx(ctx, self.name, nginx_conf("{prefix}", 2, server), port)
        self.base = f"http://127.0.0.1:{port}"
        self.roots = [process.pid]

    def describe(self, ctx):
        return "nginx static, 2 workers, sendfile, 20 ready thumbnails (pyvips Q80)"


class Vips(Target):
    name = "vips"
    group = "vips"
    cases = ("cold", "hot", "overload", "quality")

    def start(self, ctx):
        process = ctx.processes.start(self.name, [
            ctx.python, os.path.join(HERE, "vips_server.py"),
            "--origin", f"http://127.0.0.1:{ctx.origin_port}", "--port", "0"])
        self.base = parse_listening(ctx.processes.first_line(self.name))
        wait_http(self.base + "/healthz", process)
        self.roots = [process.pid]

    def describe(self, ctx):
        return "pyvips ThreadingHTTPServer, thumbnail_buffer crop=centre, Q80, no cache"


class Service(Target):
    name = "service"
    group = "service"
    cases = ("cold", "hot", "overload", "quality")

    def start(self, ctx):
        # An empty result cache every run, so cold is cold.
        shutil.rmtree(ctx.service_cache, ignore_errors=True)
        os.makedirs(ctx.service_cache)
        process = ctx.processes.start(self.name, [
            ctx.service_bin, "--host", "127.0.0.1", "--port", "0", "--allow-unsafe-url",
            "--allowed-source", f"127.0.0.1:{ctx.origin_port}", "--allow-private-sources",
            "--cache-dir", ctx.service_cache])
        self.base = parse_listening(ctx.processes.first_line(self.name))
        wait_http(self.base + "/healthz", process)
        self.roots = [process.pid]

    def path(self, ctx, source_path):
        return thumbor_path(ctx, source_path)

    def describe(self, ctx):
        return f"{ctx.service_bin} --allow-unsafe-url --cache-dir (result cache on disk)"


def parse_listening(line):
    match = re.match(r"listening on (http://\S+?:\d+)/?$", line)
    if not match:
        raise RuntimeError(f"expected 'listening on http://ADDR:PORT' as the first stdout line, got {line!r}")
    return match.group(1)


def all_targets():
    return [Thumbor(False), Thumbor(True), ImageFilter(False), ImageFilter(True), Vips(), Static(), Service()]
