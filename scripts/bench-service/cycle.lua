-- wrk script for the image-service benchmark: requests the paths of a URL list in order, one path per request.
-- Driven by bench.py through the environment:
--   BENCH_URLS     file with one path per line (e.g. /unsafe/256x256/filters:quality(80)/127.0.0.1:P/img-001.jpg)
--   BENCH_THREADS  wrk's -t; thread k takes lines k, k+T, k+2T, ... so the threads share the list
--   BENCH_MODE     once   each line once, then stop (cold): every request's status and latency recorded, and wrk
--                         ends as soon as the last answer is in, instead of running out its -d (which is only a
--                         bound in this mode)
--                  loop   cycle through the lines for -d, recording every request (overload)
--                  lean   cycle through the lines for -d with nothing recorded per request (hot: a Lua
--                         response() makes wrk parse every answer's headers into a table, which at tens of
--                         thousands of answers a second slows the load client itself; wrk's own counts are used)
--   BENCH_OUT      file that done() writes: '#key value' lines, then in once/loop mode 'status latency_us' lines
--
-- once and loop need one connection per thread (-t N -c N): a thread's only connection has one request in flight,
-- so its response() belongs to the request() before it, and the latency is exact. Times come from
-- clock_gettime(CLOCK_MONOTONIC) through LuaJIT's ffi (Debian's wrk links LuaJIT).
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock, bench_timespec *tp);
int getpid(void);
int kill(int pid, int sig);
]]
local timespec = ffi.new("bench_timespec")
local function now_us()
    ffi.C.clock_gettime(1, timespec)
    return tonumber(timespec.tv_sec) * 1000000 + tonumber(timespec.tv_nsec) / 1000
end

local mode = os.getenv("BENCH_MODE") or "lean"
local nthreads = tonumber(os.getenv("BENCH_THREADS") or "1")
local recording = (mode == "once" or mode == "loop")

-- Main state: setup() runs here once per thread before that thread's init().
local threads = {}
function setup(thread)
    thread:set("index", #threads)
    table.insert(threads, thread)
end

-- Thread states. What done() reads through thread:get() has to be global.
local requests, count, next_i, verifying = {}, 0, 1, false
local sent, answered = 0, 0
statuses, latencies = {}, {}
inflight_start = nil -- start of the one request in flight (once/loop)
first_us, last_us = nil, nil

function init(args)
    local i = 0
    for line in io.lines(os.getenv("BENCH_URLS")) do
        if line ~= "" then
            if i % nthreads == index then
                table.insert(requests, wrk.format("GET", line))
            end
            i = i + 1
        end
    end
    count = #requests
    -- wrk 4.1 calls thread 0's request() once from main() before the load starts, to check that the script
    -- makes a valid request; that call must not use up a line or count as sent.
    verifying = (index == 0)
end

local function finish_thread()
    -- Every thread appends a line when it is done; the one that sees them all ends wrk (SIGINT to the process,
    -- which the kernel gives to wrk's main thread, waking it from sleep(duration)).
    local path = os.getenv("BENCH_OUT") .. ".done"
    local f = io.open(path, "a")
    f:write(index, "\n")
    f:close()
    local n = 0
    for _ in io.lines(path) do n = n + 1 end
    if n >= nthreads then ffi.C.kill(ffi.C.getpid(), 2) end
    wrk.thread:stop()
end

function request()
    if verifying then
        verifying = false
        return requests[1]
    end
    local r = requests[next_i]
    next_i = next_i % count + 1
    if recording then
        local t = now_us()
        if inflight_start then
            -- The previous request got no response() (the connection broke): wrk reconnected and asks for
            -- the next one. Status 0; in once mode that line is done with (not asked again).
            table.insert(statuses, 0)
            table.insert(latencies, t - inflight_start)
            inflight_start = nil
            answered = answered + 1
            if mode == "once" and answered >= count then
                finish_thread()
                return r
            end
        end
        inflight_start = t
        first_us = first_us or t
        sent = sent + 1
    end
    return r
end

if recording then
    function response(status, headers, body)
        local t = now_us()
        table.insert(statuses, status)
        table.insert(latencies, t - (inflight_start or t))
        inflight_start = nil
        last_us = t
        answered = answered + 1
        if mode == "once" and answered >= count then finish_thread() end
    end
end

if mode == "once" then
    -- After its share of the list a thread sends nothing more (it stops once the last answer is in).
    function delay()
        if sent >= count then return 3600000 end
        return 0
    end
end

function done(summary, latency, requests_)
    local f = assert(io.open(os.getenv("BENCH_OUT"), "w"))
    local end_us = now_us()
    f:write("#mode ", mode, "\n")
    f:write("#wrk_duration_us ", summary.duration, "\n")
    f:write("#wrk_requests ", summary.requests, "\n")
    f:write("#wrk_bytes ", summary.bytes, "\n")
    local e = summary.errors
    f:write("#wrk_errors ", e.connect, " ", e.read, " ", e.write, " ", e.status, " ", e.timeout, "\n")
    f:write("#wrk_latency_us ", latency:percentile(50), " ", latency:percentile(99), " ", latency.max, "\n")
    if recording then
        local first, last = nil, nil
        for _, t in ipairs(threads) do
            local tf, tl = t:get("first_us"), t:get("last_us")
            if tf and (not first or tf < first) then first = tf end
            if tl and (not last or tl > last) then last = tl end
        end
        f:write("#first_us ", first or 0, "\n#last_us ", last or 0, "\n#end_us ", end_us, "\n")
        for _, t in ipairs(threads) do
            local s, l = t:get("statuses"), t:get("latencies")
            for i = 1, #s do
                f:write(s[i], " ", string.format("%.0f", l[i]), "\n")
            end
            local pending = t:get("inflight_start")
            if pending then
                -- Sent, never answered before the load ended: status -1, age at the end.
                f:write("-1 ", string.format("%.0f", end_us - pending), "\n")
            end
        end
    end
    f:close()
end
