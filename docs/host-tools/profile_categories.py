#!/usr/bin/env python3
"""Group a `perf report --no-children --stdio --sort sym -g none` listing by kernel concept
(spin locks, mutex, slab/memcg, usercopy checks, copies, skb/socket, pipe, scheduler,
syscall entry, page faults, user space, idle) and print each group's share of the busy
samples and, given the CPU time per message, its ns per message.
    profile_categories.py PROF.txt [CPU_NS_PER_MSG]
First matching pattern wins; symbols below perf report's cut (here the top 150) are not
counted, so the shares are of the listed samples. Used for docs/host-measurements.md §21."""
import sys,re
cats=[('idle',r'safe_halt|default_idle|cpuidle|do_idle|poll_idle'),
('spinlock',r'spin_lock|spin_unlock|queued_spin|pv_queued'),
('mutex',r'mutex|osq_lock'),
('slab/memcg',r'slab|kmem_cache|memcg|obj_stock|kmalloc|__account_obj|refill_obj|obj_cgroup'),
('usercopy check',r'check_object_size|check_heap_object|virt_addr_valid'),
('copy',r'copy_to_iter|copy_from_iter|datagram_iter|copy_page_|copy_mc'),
('pipe',r'pipe'),
('switch/sched',r'finish_task_switch|__schedule|schedule|pick_|enqueue|dequeue|update_curr|wake|ttwu|select_task|__switch_to|switch_mm|rseq|set_next|put_prev'),
('skb/sock',r'skb|sock_|unix_|sk_|scm_|maybe_add_creds'),
('syscall entry/vfs',r'do_syscall|syscall|vfs_|fdget|fput|ksys_|rw_verify|entry|__x64|exit_to_user|irqentry|security_|fsnotify'),
('page faults/mm',r'page|fault|folio|rmap|filemap|unmap|pte|vma|mm_'),
('user',r'^\[\.\]'),
]
tot={}
for line in open(sys.argv[1]):
  m=re.match(r'\s+([\d.]+)%\s+(\[.\])\s+(\S+)',line)
  if not m: continue
  pct=float(m.group(1)); sym=m.group(3); kind=m.group(2)
  c='other'
  if kind=='[.]': c='user'
  else:
    for n,rx in cats:
      if re.search(rx,sym): c=n;break
  tot[c]=tot.get(c,0)+pct
busy=sum(v for k,v in tot.items() if k!='idle')
cpu=float(sys.argv[2]) if len(sys.argv)>2 else 0
for k,v in sorted(tot.items(),key=lambda x:-x[1]):
  print(f'{k:20s} {v:6.2f}%  {v/busy*100:5.1f}% of busy' + (f'  {v/busy*cpu:6.0f} ns/msg' if cpu else ''))
