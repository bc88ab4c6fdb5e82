import { expect } from 'chai';
import { acceptsLoopback, hostNameOf, isPanelHost, panelUrl, PANEL_HOST_NAME } from '../../gateway/src/admin/panel-host.ts';

// The panel's host name of its own (gateway/src/admin/panel-host.ts). The real thing, in Chromium:
// test/admin/cookie-jar.int.test.ts.

describe('the panel\'s host name', () => {
  it('reads a Host header\'s name: lower case, no port, no trailing dot; IPv6 literals whole', () => {
    expect(hostNameOf('FNHOST-Admin.LOCALHOST.:8081')).to.equal('fnhost-admin.localhost');
    expect(hostNameOf('[::1]:8081')).to.equal('[::1]');
    expect(hostNameOf(undefined)).to.equal('');
  });

  it('the name and every name below it are the panel\'s; others are not', () => {
    for (const host of [PANEL_HOST_NAME, 'fnhost-admin.localhost:8080', 'x.fnhost-admin.localhost', 'a.b.FNHOST-ADMIN.localhost.:1']) expect(isPanelHost(host), host).to.equal(true);
    for (const host of [undefined, '', 'localhost:8080', '127.0.0.1:8080', 'xfnhost-admin.localhost', 'fnhost-admin.localhost.example.com', '[::1]:8080']) expect(isPanelHost(host), String(host)).to.equal(false);
  });

  it('the panel\'s address: on its own name when the listener takes loopback connections, else the listener\'s own URL', () => {
    expect(panelUrl('http://127.0.0.1:8081', '127.0.0.1')).to.equal('http://fnhost-admin.localhost:8081/admin/');
    expect(panelUrl('http://0.0.0.0:8081', '0.0.0.0')).to.equal('http://fnhost-admin.localhost:8081/admin/');
    expect(panelUrl('http://[::1]:8081', '::1')).to.equal('http://fnhost-admin.localhost:8081/admin/');
    expect(panelUrl('http://10.0.0.5:8081', '10.0.0.5')).to.equal('http://10.0.0.5:8081/admin/');
    expect(acceptsLoopback('::')).to.equal(true);
    expect(acceptsLoopback('192.168.1.2')).to.equal(false);
  });
});
